#include "oneflow_lite/api/op_tools.h"

#include <limits>

#include "oneflow_lite/api/eager.h"
#include "ops/kernel.h"
#include "ops/nd_sbp.h"

namespace ofl {

namespace {
// A tensor's place in its logical tensor (`what`: "output 0", "input ids"):
// the logical shape has its rank and the slice [offset, offset + shape) lies
// inside.
Status CheckLogicalPlace(const std::string& op_type, const std::string& what, const Shape& local,
                         const Shape& logical, const std::vector<int64_t>& offset) {
  OFL_ENSURE(static_cast<int64_t>(offset.size()) == logical.ndim(), op_type,
             ": logical_offset has ", offset.size(), " entries but logical_shape=", logical,
             " has ", logical.ndim(), " dims");
  OFL_ENSURE(local.ndim() == logical.ndim(), op_type, ": ", what, " shape=", local,
             " and logical_shape=", logical, " differ in rank");
  for (int64_t a = 0; a < logical.ndim(); ++a) {
    OFL_ENSURE(offset[a] >= 0 && offset[a] + local[a] <= logical[a], op_type, ": ", what,
               " shape=", local, " at logical_offset[", a, "]=", offset[a],
               " does not fit in logical_shape=", logical);
  }
  return Status::OK();
}

// Kernels CHECK the shapes and dtypes they are given, so the caller's output
// descs are checked against inference on the given inputs. Without a
// logical place (`shard` false) they must be exactly the inferred ones. A
// shard (logical_shape/offset given: one rank of an SBP signature, whose
// attrs are logical, e.g. reshape's) need not infer on its own: its shapes
// are the caller's word, its dtypes must still be the inferred ones when
// the local inputs infer.
Status CheckOutputDescs(const OpDef& def, const OpContext& ctx,
                        const std::vector<TensorDesc>& outputs, bool shard) {
  OpContext local = ctx;
  Maybe<std::vector<TensorDesc>> inferred = def.Infer(&local);
  if (!inferred.ok()) return shard ? Status::OK() : inferred.status();
  for (size_t i = 0; i < outputs.size() && i < inferred.value().size(); ++i) {
    const TensorDesc& want = inferred.value()[i];
    const bool same = shard ? outputs[i].dtype == want.dtype : outputs[i] == want;
    OFL_ENSURE(same, ctx.op_type, ": output ", def.output_names()[i], " shape=", outputs[i].shape,
               " ", DataTypeName(outputs[i].dtype), " but the op makes ", want.shape, " ",
               DataTypeName(want.dtype), " from these inputs",
               shard ? "" : " (give logical_shape/offset for one rank's shard)");
  }
  return Status::OK();
}

// NaN for floats, a sentinel for integers: an element no kernel writes shows.
void Poison(Tensor* t) {
  if (t->numel() == 0) return;
  if (IsComputeFloat(t->dtype())) {
    t->Fill(std::numeric_limits<double>::quiet_NaN());
  } else if (t->dtype() == DataType::kInt32 || t->dtype() == DataType::kInt64) {
    t->Fill(-999999);
  }
}
}  // namespace

Maybe<std::vector<Tensor>> RunOp(const std::string& op_type, const std::vector<Tensor>& inputs,
                                 const AttrMap& attrs) {
  EagerExecutor eager;
  return eager.Run(op_type, inputs, attrs);
}

Maybe<std::vector<Tensor>> RunOpGrad(const std::string& op_type, const std::vector<Tensor>& inputs,
                                     const AttrMap& attrs,
                                     const std::vector<Tensor>& output_grads) {
  EagerExecutor eager;
  return eager.RunGrad(op_type, inputs, attrs, output_grads);
}

Maybe<std::vector<Tensor>> RunKernel(const std::string& op_type, const std::vector<Tensor>& inputs,
                                     const AttrMap& attrs, const std::vector<TensorDesc>& outputs,
                                     const std::optional<Shape>& logical_shape,
                                     const std::optional<std::vector<int64_t>>& logical_offset,
                                     int64_t iteration,
                                     const std::vector<LogicalPlace>& input_places) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(op_type));
  OFL_ASSIGN_OR_RETURN(const KernelFn* kernel, KernelRegistry::Find(op_type, DeviceType::kCPU));
  OpContext ctx;
  ctx.op_type = op_type;
  for (size_t i = 0; i < inputs.size(); ++i) {
    OFL_ENSURE(inputs[i].defined(), op_type, ": input ", ArgName(*def, static_cast<int>(i)),
               " is missing");
    ctx.inputs.push_back({inputs[i].shape(), inputs[i].dtype()});
  }
  ctx.attrs = attrs;
  OFL_RETURN_IF_ERROR(def->CompleteAttrs(&ctx));
  OFL_ENSURE(outputs.size() == def->output_names().size(), op_type, ": ", outputs.size(),
             " output descs given for ", def->output_names().size(), " outputs");
  OFL_RETURN_IF_ERROR(CheckOutputDescs(*def, ctx, outputs,
                                       logical_shape.has_value() || logical_offset.has_value()));

  std::vector<Tensor> local_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    local_inputs.push_back(def->is_mutable_input(static_cast<int>(i)) ? inputs[i].Clone()
                                                                      : inputs[i]);
  }
  std::vector<Tensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorDesc& d = outputs[i];
    OFL_RETURN_IF_ERROR(
        CheckAllocation(d.shape, d.dtype, op_type + ": output " + def->output_names()[i]));
    results.emplace_back(d.shape, d.dtype);
    Poison(&results.back());
  }

  KernelContext kc;
  kc.op_type = op_type;
  kc.op_name = op_type;
  kc.attrs = &ctx.attrs;
  kc.iteration = iteration;
  for (Tensor& t : local_inputs) kc.inputs.push_back(&t);
  for (Tensor& t : results) kc.outputs.push_back(&t);
  if (logical_shape.has_value() || logical_offset.has_value()) {
    OFL_ENSURE(!outputs.empty(), op_type, ": logical_shape/offset given for an op without outputs");
  }
  if (!outputs.empty()) {
    kc.logical_shape = logical_shape.value_or(outputs[0].shape);
    OFL_RETURN_IF_ERROR(
        CheckShape(kc.logical_shape, outputs[0].dtype, op_type + ": logical_shape"));
    kc.logical_offset = logical_offset.value_or(std::vector<int64_t>(kc.logical_shape.ndim(), 0));
    OFL_RETURN_IF_ERROR(CheckLogicalPlace(op_type, "output 0", outputs[0].shape, kc.logical_shape,
                                          kc.logical_offset));
  }
  if (!input_places.empty()) {
    OFL_ENSURE(input_places.size() == inputs.size(), op_type, ": ", input_places.size(),
               " input places given for ", inputs.size(), " inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string what = "input " + ArgName(*def, static_cast<int>(i));
      OFL_RETURN_IF_ERROR(CheckLogicalPlace(op_type, what, inputs[i].shape(), input_places[i].shape,
                                            input_places[i].offset));
      kc.input_logical_shapes.push_back(input_places[i].shape);
      kc.input_logical_offsets.push_back(input_places[i].offset);
    }
  }
  OFL_RETURN_IF_ERROR(CallKernel(*kernel, kc));

  for (size_t i = 0; i < local_inputs.size(); ++i) {
    if (def->is_mutable_input(static_cast<int>(i))) results.push_back(local_inputs[i]);
  }
  return results;
}

Maybe<OpInfo> InspectOp(const std::string& op_type, const std::vector<TensorDesc>& inputs,
                        const AttrMap& attrs) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(op_type));
  OpContext ctx;
  ctx.op_type = op_type;
  ctx.inputs = inputs;
  ctx.attrs = attrs;
  OpInfo info;
  OFL_ASSIGN_OR_RETURN(info.outputs, def->Infer(&ctx));
  info.cost = def->EstimateCost(ctx, info.outputs);
  info.signatures = def->SbpSignatures(ctx);
  return info;
}

Maybe<std::vector<NdSbpSignature>> InspectNdSbp(const std::string& op_type,
                                                const std::vector<TensorDesc>& inputs,
                                                const AttrMap& attrs,
                                                const std::vector<int64_t>& hierarchy,
                                                bool known_sizes) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(op_type));
  OpContext ctx;
  ctx.op_type = op_type;
  ctx.inputs = inputs;
  ctx.attrs = attrs;
  OFL_RETURN_IF_ERROR(def->Infer(&ctx).status());
  if (!known_sizes) return NdSbpSignatures(*def, ctx, static_cast<int64_t>(hierarchy.size()));
  return NdSbpSignatures(*def, ctx, hierarchy);
}

std::vector<std::string> OpTypes() { return OpRegistry::ListOps(); }

KernelIsa KernelCpuIsa() {
  const CpuIsaInfo info = GetCpuIsaInfo();
  return {CpuIsaName(info.active), CpuIsaName(info.detected), info.requested,
          info.onednn_requested,   info.onednn_cap,           info.note};
}

Status CheckKernelCpuIsaRequest() { return CheckCpuIsaRequest(); }

Maybe<OpSchema> DescribeOp(const std::string& op_type) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(op_type));
  OpSchema schema;
  schema.type = def->type();
  schema.inputs = def->input_names();
  schema.variadic_input = def->variadic_input();
  schema.outputs = def->output_names();
  for (const auto& [name, value] : def->attr_defaults()) {
    if (def->attr_required().at(name)) {
      schema.attrs[name] = std::nullopt;
    } else {
      schema.attrs[name] = AttrToString(value);
    }
  }
  schema.doc = def->doc();
  schema.has_grad = def->has_grad();
  for (int i = 0; i < static_cast<int>(def->input_names().size()); ++i) {
    if (def->is_mutable_input(i)) schema.mutable_inputs.push_back(i);
  }
  return schema;
}

}  // namespace ofl
