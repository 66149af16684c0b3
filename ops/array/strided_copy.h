// The array ops' strided copy (StridedCopy, LayoutBoxCopy, CopyBox) is
// core's, oneflow_lite/core/strided_copy.h: the host DeviceContext's box copy
// uses the same routine. This header only keeps the ops' include path.
#pragma once

#include "oneflow_lite/core/strided_copy.h"
