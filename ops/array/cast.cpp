// cast: converts a tensor between float32, float64, bfloat16, int32, int64
// and bool (attr "dtype", the target's name). Registration, shape inference, SBP,
// cost and gradient; the kernel is in cast_cpu.cpp. Mixed precision
// (nn.Graph config.mixed_precision("bf16")) inserts it in front of matmuls.
//
//   cast(x, dtype): x in `dtype`; to bfloat16 rounds to nearest even, NaN
//                   stays NaN; from bfloat16 is exact; float to integer
//                   truncates toward zero; to bool is x != 0 (NaN: true);
//                   bool to a number is 0 or 1. Integers pass through double
//                   (exact up to 2^53).
// The gradient is the output gradient cast back to x's dtype.
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

bool Castable(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kBFloat16 ||
         t == DataType::kInt32 || t == DataType::kInt64 || t == DataType::kBool;
}

Maybe<std::vector<TensorDesc>> InferCast(const OpContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const std::string& name = ctx.attrs.Get<std::string>("dtype");
  Maybe<DataType> to = ParseDataType(name);
  OFL_ENSURE(to.ok() && Castable(to.value()), ctx.where(), ": dtype='", name,
             "' is not a cast target (expected float32, float64, bfloat16, int32, int64 or bool)");
  OFL_ENSURE(Castable(x.dtype), ctx.where(), ": x.dtype=", DataTypeName(x.dtype),
             " cannot be cast (expected float32, float64, bfloat16, int32, int64 or bool)");
  return std::vector<TensorDesc>{{x.shape, to.value()}};
}

// One conversion per element; reads x and writes out.
OpCost CastCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(outs[0].shape.NumElements()),
          ctx.input(0).nbytes() + outs[0].nbytes()};
}

Status CastGrad(GradContext& g) {
  if (!g.NeedsInputGrad(0) || g.OutputGrad(0).empty()) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dx,
                       g.Emit1("cast", {g.OutputGrad(0)},
                               {{"dtype", std::string(DataTypeName(g.InputDesc(0).dtype))}}));
  g.SetInputGrad(0, dx);
  return Status::OK();
}

// Rounding is not linear (the sum of rounded parts is not the rounded sum),
// so there is no partial-sum signature; every split and B pass through.
OFL_REGISTER_OP("cast")
    .Input("x")
    .Output("out")
    .RequiredAttr("dtype", std::string("float32"))
    .InferShape(InferCast)
    .Sbp(Elementwise(PartialRule::kNone))
    .Cost(CastCost)
    .Grad(CastGrad)
    .Doc("x converted to dtype (float32, float64, bfloat16, int32, int64 or bool).");

}  // namespace
}  // namespace ofl
