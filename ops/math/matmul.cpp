// matmul and batch_matmul: registration, shape inference, SBP, cost and
// gradient. Kernels are in matmul_cpu.cpp.
//
//   matmul(a, b):       op(a) (m, k) x op(b) (k, n) -> (m, n), a and b 2-D
//   batch_matmul(a, b): the same on the last two axes; a and b have equal
//                       batch axes (no broadcasting), ndim >= 3
//   matmul_bias(a, b, bias): matmul(a, b) + bias along the last axis, bias
//                       1-D of size n, float32 or float64: matmul followed by
//                       bias_add(axis=1) as one op, which the CPU kernel runs
//                       as one oneDNN matmul with its bias argument (the
//                       single-device lowering fuses the pair into it,
//                       graph/matmul_bias_fusion.h)
// op(x) is x, or x transposed when transpose_a / transpose_b is set.
// bfloat16 a and b give a float32 out (float32 accumulation); the backward
// then casts dy to bfloat16 and the input gradients back to bfloat16.
#include "ops/grad.h"
#include "ops/kernel.h"
#include "ops/op_registry.h"
#include "ops/sbp_rules.h"

namespace ofl {

namespace {

const char* Flag(bool v) { return v ? "true" : "false"; }

// Shape inference for both ops. `batched` selects batch_matmul's rules and
// its negative axis names (a.shape[-1]); matmul names axes 0 and 1.
Maybe<std::vector<TensorDesc>> InferMatmulLike(const OpContext& ctx, bool batched) {
  const TensorDesc& a = ctx.input(0);
  const TensorDesc& b = ctx.input(1);
  const bool ta = ctx.attrs.Get<bool>("transpose_a");
  const bool tb = ctx.attrs.Get<bool>("transpose_b");
  OFL_ENSURE(a.dtype == b.dtype, ctx.where(), ": a.dtype=", DataTypeName(a.dtype),
             " != b.dtype=", DataTypeName(b.dtype));
  OFL_ENSURE(IsComputeFloat(a.dtype) || a.dtype == DataType::kBFloat16, ctx.where(), ": dtype ",
             DataTypeName(a.dtype), " is not float32, float64 or bfloat16");
  if (batched) {
    OFL_ENSURE(a.shape.ndim() >= 3, ctx.where(),
               ": a must have at least 3 dims, got a.shape=", a.shape);
    OFL_ENSURE(b.shape.ndim() >= 3, ctx.where(),
               ": b must have at least 3 dims, got b.shape=", b.shape);
    std::vector<int64_t> batch_a(a.shape.dims().begin(), a.shape.dims().end() - 2);
    std::vector<int64_t> batch_b(b.shape.dims().begin(), b.shape.dims().end() - 2);
    OFL_ENSURE(batch_a == batch_b, ctx.where(), ": batch dims a.shape[:-2]=", Shape(batch_a),
               " != b.shape[:-2]=", Shape(batch_b), " (a.shape=", a.shape, ", b.shape=", b.shape,
               ")");
  } else {
    OFL_ENSURE(a.shape.ndim() == 2, ctx.where(), ": a must be 2-D, got a.shape=", a.shape);
    OFL_ENSURE(b.shape.ndim() == 2, ctx.where(), ": b must be 2-D, got b.shape=", b.shape);
  }
  const int64_t ra = a.shape.ndim() - 2;  // index of the row axis of a
  const int64_t rb = b.shape.ndim() - 2;
  const int64_t a_k_axis = ta ? ra : ra + 1;
  const int64_t b_k_axis = tb ? rb + 1 : rb;
  auto axis_name = [&](int64_t axis, int64_t ndim) {
    return std::to_string(batched ? axis - ndim : axis);
  };
  OFL_ENSURE(a.shape[a_k_axis] == b.shape[b_k_axis], ctx.where(), ": a.shape[",
             axis_name(a_k_axis, a.shape.ndim()), "]=", a.shape[a_k_axis], " != b.shape[",
             axis_name(b_k_axis, b.shape.ndim()), "]=", b.shape[b_k_axis],
             " (transpose_a=", Flag(ta), ", transpose_b=", Flag(tb), ")");
  std::vector<int64_t> out(a.shape.dims().begin(), a.shape.dims().end() - 2);
  out.push_back(ta ? a.shape[ra + 1] : a.shape[ra]);
  out.push_back(tb ? b.shape[rb] : b.shape[rb + 1]);
  // bfloat16 inputs accumulate and output in float32 (mixed precision).
  const DataType out_dtype = a.dtype == DataType::kBFloat16 ? DataType::kFloat32 : a.dtype;
  return std::vector<TensorDesc>{{Shape(out), out_dtype}};
}

// matmul_bias: matmul's rules on a and b, then bias: 1-D, float32 or
// float64 like them, of size out.shape[1].
Maybe<std::vector<TensorDesc>> InferMatmulBias(const OpContext& ctx) {
  OFL_ASSIGN_OR_RETURN(std::vector<TensorDesc> out, InferMatmulLike(ctx, false));
  const TensorDesc& bias = ctx.input(2);
  OFL_ENSURE(IsComputeFloat(ctx.input(0).dtype), ctx.where(), ": dtype ",
             DataTypeName(ctx.input(0).dtype), " is not float32 or float64");
  OFL_ENSURE(bias.dtype == ctx.input(0).dtype, ctx.where(),
             ": bias.dtype=", DataTypeName(bias.dtype),
             " != a.dtype=", DataTypeName(ctx.input(0).dtype));
  OFL_ENSURE(bias.shape.ndim() == 1, ctx.where(),
             ": bias must be 1-D, got bias.shape=", bias.shape);
  OFL_ENSURE(bias.shape[0] == out[0].shape[1], ctx.where(), ": bias.shape[0]=", bias.shape[0],
             " != out.shape[1]=", out[0].shape[1]);
  return out;
}

// "mk,kn->mn" with the flags applied, batch axes as extra letters up front.
std::string MatmulSpec(const OpContext& ctx, int64_t num_batch) {
  static const std::string kBatchLetters = "abcdefghijlopqrstuvwxyz";  // no k, m, n
  CHECK_LE(num_batch, static_cast<int64_t>(kBatchLetters.size()));
  std::string batch = kBatchLetters.substr(0, num_batch);
  std::string a = batch + (ctx.attrs.Get<bool>("transpose_a") ? "km" : "mk");
  std::string b = batch + (ctx.attrs.Get<bool>("transpose_b") ? "nk" : "kn");
  return a + "," + b + "->" + batch + "mn";
}

// Splits on m, n or a batch axis stay local; a split on k gives P; the op is
// linear in each input (P in one input with B in the other gives P).
std::vector<SbpSignature> MatmulSbp(const OpContext& ctx) {
  int64_t num_batch = ctx.input(0).shape.ndim() - 2;
  if (num_batch > 23) return {{{Sbp::Broadcast(), Sbp::Broadcast()}, {Sbp::Broadcast()}}};
  return EinsumSignatures(MatmulSpec(ctx, num_batch));
}

// matmul's signatures with bias following the output's columns: S(0) when
// out is S(1), P when out is P (each rank adds its addend of bias), else B.
std::vector<SbpSignature> MatmulBiasSbp(const OpContext& ctx) {
  std::vector<SbpSignature> sigs = MatmulSbp(ctx);
  for (SbpSignature& sig : sigs) {
    const Sbp& out = sig.outputs[0];
    sig.inputs.push_back(out.is_split() && out.axis() == 1 ? Sbp::Split(0)
                         : out.is_partial_sum()            ? Sbp::PartialSum()
                                                           : Sbp::Broadcast());
  }
  return sigs;
}

// 2*m*n*k per batch element: one multiply and one add per term.
OpCost MatmulCost(const OpContext& ctx, const std::vector<TensorDesc>& outs) {
  const Shape& a = ctx.input(0).shape;
  int64_t k = ctx.attrs.Get<bool>("transpose_a") ? a[a.ndim() - 2] : a[a.ndim() - 1];
  return {2.0 * static_cast<double>(outs[0].shape.NumElements()) * static_cast<double>(k),
          outs[0].nbytes()};
}

AttrMap Flags(bool ta, bool tb) { return AttrMap{{"transpose_a", ta}, {"transpose_b", tb}}; }

// With A = op(a), B = op(b), y = A B: dA = dy B^T and dB = A^T dy. Each is
// one more product of the stored a, b and dy with suitable flags:
//   da = ta ? B dy^T : dy B^T,   db = tb ? dy^T A : A^T dy.
Status MatmulLikeGrad(GradContext& g, const std::string& op) {
  const bool ta = g.attrs().Get<bool>("transpose_a");
  const bool tb = g.attrs().Get<bool>("transpose_b");
  const bool bf16 = g.InputDesc(0).dtype == DataType::kBFloat16;
  std::string dy = g.OutputGrad(0);
  if (bf16) {
    OFL_ASSIGN_OR_RETURN(dy, g.Emit1("cast", {dy}, {{"dtype", std::string("bfloat16")}}));
  }
  // The products come out in float32; a bfloat16 input's gradient is bfloat16.
  auto to_input_dtype = [&](const std::string& grad) -> Maybe<std::string> {
    if (!bf16) return grad;
    return g.Emit1("cast", {grad}, {{"dtype", std::string("bfloat16")}});
  };
  const std::string& a = g.Input(0);
  const std::string& b = g.Input(1);
  if (g.NeedsInputGrad(0)) {
    std::string da;
    if (!ta) {
      OFL_ASSIGN_OR_RETURN(da, g.Emit1(op, {dy, b}, Flags(false, !tb)));
    } else {
      OFL_ASSIGN_OR_RETURN(da, g.Emit1(op, {b, dy}, Flags(tb, true)));
    }
    OFL_ASSIGN_OR_RETURN(da, to_input_dtype(da));
    g.SetInputGrad(0, da);
  }
  if (g.NeedsInputGrad(1)) {
    std::string db;
    if (!tb) {
      OFL_ASSIGN_OR_RETURN(db, g.Emit1(op, {a, dy}, Flags(!ta, false)));
    } else {
      OFL_ASSIGN_OR_RETURN(db, g.Emit1(op, {dy, a}, Flags(true, ta)));
    }
    OFL_ASSIGN_OR_RETURN(db, to_input_dtype(db));
    g.SetInputGrad(1, db);
  }
  return Status::OK();
}

// matmul's gradients of a and b, and bias's: dy summed over its rows.
Status MatmulBiasGrad(GradContext& g) {
  OFL_RETURN_IF_ERROR(MatmulLikeGrad(g, "matmul"));
  if (!g.NeedsInputGrad(2)) return Status::OK();
  OFL_ASSIGN_OR_RETURN(std::string dbias,
                       g.Emit1("reduce_sum", {g.OutputGrad(0)},
                               {{"axes", std::vector<int64_t>{0}}, {"keepdims", false}}));
  g.SetInputGrad(2, dbias);
  return Status::OK();
}

// AttrValue(false), not a bare false: that would pick OpDef::Attr(name, int).
OFL_REGISTER_OP("matmul")
    .Input("a")
    .Input("b")
    .Output("out")
    .Attr("transpose_a", AttrValue(false))
    .Attr("transpose_b", AttrValue(false))
    .InferShape([](const OpContext& ctx) { return InferMatmulLike(ctx, false); })
    .Sbp(MatmulSbp)
    .Cost(MatmulCost)
    .Grad([](GradContext& g) { return MatmulLikeGrad(g, "matmul"); })
    .Doc("Matrix product of 2-D a and b, either transposed first by its flag.");

OFL_REGISTER_OP("batch_matmul")
    .Input("a")
    .Input("b")
    .Output("out")
    .Attr("transpose_a", AttrValue(false))
    .Attr("transpose_b", AttrValue(false))
    .InferShape([](const OpContext& ctx) { return InferMatmulLike(ctx, true); })
    .Sbp(MatmulSbp)
    .Cost(MatmulCost)
    .Grad([](GradContext& g) { return MatmulLikeGrad(g, "batch_matmul"); })
    .Doc("Matrix product over the last two axes; a and b have identical batch axes.");

OFL_REGISTER_OP("matmul_bias")
    .Input("a")
    .Input("b")
    .Input("bias")
    .Output("out")
    .Attr("transpose_a", AttrValue(false))
    .Attr("transpose_b", AttrValue(false))
    .InferShape(InferMatmulBias)
    .Sbp(MatmulBiasSbp)
    .Cost([](const OpContext& ctx, const std::vector<TensorDesc>& outs) {
      OpCost cost = MatmulCost(ctx, outs);  // + one add per element of out
      cost.flops += static_cast<double>(outs[0].shape.NumElements());
      return cost;
    })
    .Grad(MatmulBiasGrad)
    .Doc("matmul(a, b) + bias along the last axis (bias 1-D of size n); float32 or float64.");

}  // namespace
}  // namespace ofl
