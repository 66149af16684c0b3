// equal, not_equal, less, less_equal, greater, greater_equal: elementwise
// comparisons with numpy broadcasting, giving bool tensors. Both inputs have
// one dtype (float32, float64, int32, int64 or bool; the frontend promotes
// mixed ones first). NaN compares as in IEEE and numpy: unequal to
// everything, itself included. No gradient (the output is not floating).
// Kernels: compare_cpu.cpp, compare_cuda.cu.
#include "ops/kernel.h"
#include "ops/math/value_infer.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

Maybe<std::vector<TensorDesc>> InferCompare(const OpContext& ctx) {
  const TensorDesc& a = ctx.input(0);
  const TensorDesc& b = ctx.input(1);
  OFL_ENSURE(a.dtype == b.dtype, ctx.where(), ": a.dtype=", DataTypeName(a.dtype),
             " != b.dtype=", DataTypeName(b.dtype));
  OFL_ENSURE(IsValueType(a.dtype), ctx.where(), ": dtype ", DataTypeName(a.dtype),
             " is not float32, float64, int32, int64 or bool");
  OFL_ASSIGN_OR_RETURN(Shape out, BroadcastShapes(ctx, {0, 1}));
  return std::vector<TensorDesc>{{out, DataType::kBool}};
}

// One comparison per output element.
OpCost CompareCost(const OpContext&, const std::vector<TensorDesc>& outs) {
  return {static_cast<double>(outs[0].shape.NumElements()), outs[0].nbytes()};
}

bool RegisterCompare(const std::string& name, const std::string& symbol) {
  OpRegistry::Register(name)
      .Input("a")
      .Input("b")
      .Output("out")
      .InferShape(InferCompare)
      .Sbp(Elementwise(PartialRule::kNone))
      .Cost(CompareCost)
      .Doc("a " + symbol + " b elementwise with numpy broadcasting; a bool tensor.");
  return true;
}

const bool kRegistered = RegisterCompare("equal", "==") && RegisterCompare("not_equal", "!=") &&
                         RegisterCompare("less", "<") && RegisterCompare("less_equal", "<=") &&
                         RegisterCompare("greater", ">") && RegisterCompare("greater_equal", ">=");

}  // namespace
}  // namespace ofl
