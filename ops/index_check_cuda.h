// The device-side twin of ops/index_check.h for CUDA kernels: a range check
// of an integer index tensor in device memory that never faults the device.
// It registers the check with the kernel's CudaStream (NoteDeviceCheck) and
// enqueues two small kernels: the first stores the smallest bad flat index
// in the stream's CudaDeviceError record (only while the record is free or
// already this launch's), the second copies that element's value next to it.
// The owner of the stream later calls TakeDeviceError, which gives the very
// message the CPU kernel's CheckIndexRange fails with (IndexRangeText).
// Kernels that gather with the ids must skip out-of-range ones themselves.
// Thread safety: as the stream (one thread at a time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/kernel.h"

namespace ofl::cuda {

// Enqueues the check of every element of `t` (int32/int64, device memory)
// against [0, limit) on the kernel's stream; arguments as CheckIndexRange.
void LaunchIndexCheck(KernelContext& k, const std::string& name, const Tensor& t, int64_t limit,
                      const std::string& limit_text, const std::vector<int64_t>& offset);

}  // namespace ofl::cuda
