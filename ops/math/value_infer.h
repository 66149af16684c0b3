// Inference helpers shared by the ops over values of any dtype (the
// comparisons, where, the logical reductions): which dtypes they take and
// numpy's broadcast of several inputs. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ops/op_registry.h"

namespace ofl {

// float32, float64, int32, int64 or bool: the dtypes eager tensors hold.
bool IsValueType(DataType t);

// The numpy broadcast of the shapes of ctx's inputs `inputs`; an error names
// the op, the two arguments and the axis that do not fit.
Maybe<Shape> BroadcastShapes(const OpContext& ctx, const std::vector<int>& inputs);

// The name of ctx's input i, as its OpDef declares it ("cond").
std::string InputName(const OpContext& ctx, int i);

}  // namespace ofl
