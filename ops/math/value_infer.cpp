// See value_infer.h.
#include "ops/math/value_infer.h"

#include <algorithm>

namespace ofl {

std::string InputName(const OpContext& ctx, int i) {
  Maybe<const OpDef*> def = OpRegistry::Find(ctx.op_type);
  return def.ok() ? ArgName(*def.value(), i) : "input " + std::to_string(i);
}

bool IsValueType(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kInt32 ||
         t == DataType::kInt64 || t == DataType::kBool;
}

Maybe<Shape> BroadcastShapes(const OpContext& ctx, const std::vector<int>& inputs) {
  int64_t n = 0;
  for (int i : inputs) n = std::max(n, ctx.input(i).shape.ndim());
  std::vector<int64_t> out(n, 1);
  std::vector<int> source(n, -1);  // the input that set each extent
  for (int i : inputs) {
    const Shape& s = ctx.input(i).shape;
    for (int64_t a = 0; a < s.ndim(); ++a) {
      const int64_t at = a + n - s.ndim();
      const int64_t d = s[a];
      if (d == out[at] || d == 1) continue;
      OFL_ENSURE(out[at] == 1, ctx.where(), ": ", InputName(ctx, source[at]),
                 ".shape=", ctx.input(source[at]).shape, " and ", InputName(ctx, i), ".shape=", s,
                 " cannot be broadcast (axis ", at - n, ": ", out[at], " vs ", d, ")");
      out[at] = d;
      source[at] = i;
    }
  }
  return Shape(out);
}

}  // namespace ofl
