#include "ops/op_registry.h"

#include <algorithm>

#include "oneflow_lite/core/checked_math.h"

namespace ofl {

namespace {
std::map<std::string, OpDef>& Registry() {
  static std::map<std::string, OpDef> registry;
  return registry;
}

bool SameAttrType(const AttrValue& expected, const AttrValue& given) {
  return expected.index() == given.index();
}
}  // namespace

int64_t TensorDesc::nbytes() const {
  std::optional<int64_t> bytes = MulInt64(shape.NumElements(), SizeOf(dtype));
  CHECK(bytes) << "bytes of shape " << shape
               << " overflow int64: it was not validated (CheckShape)";
  return *bytes;
}

std::string SbpSignature::ToString() const {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i].ToString();
  s += " -> ";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : "") + outputs[i].ToString();
  return s;
}

OpDef& OpDef::Input(const std::string& name) {
  CHECK(!variadic_input_) << type_ << ": an InputList must be the only input";
  CHECK_EQ(num_required_inputs_, static_cast<int>(input_names_.size()))
      << type_ << ": input '" << name << "' follows an optional input";
  input_names_.push_back(name);
  input_mutable_.push_back(false);
  ++num_required_inputs_;
  return *this;
}

OpDef& OpDef::OptionalInput(const std::string& name) {
  CHECK(!variadic_input_) << type_ << ": an InputList must be the only input";
  input_names_.push_back(name);
  input_mutable_.push_back(false);
  return *this;
}

OpDef& OpDef::InputList(const std::string& name) {
  CHECK(input_names_.empty()) << type_ << ": an InputList must be the only input";
  input_names_.push_back(name);
  input_mutable_.push_back(false);
  variadic_input_ = true;
  num_required_inputs_ = 1;
  return *this;
}

OpDef& OpDef::MutableInput(const std::string& name) {
  Input(name);
  input_mutable_.back() = true;
  return *this;
}

OpDef& OpDef::Output(const std::string& name) {
  output_names_.push_back(name);
  return *this;
}

OpDef& OpDef::Attr(const std::string& name, AttrValue default_value) {
  attr_defaults_[name] = std::move(default_value);
  attr_required_[name] = false;
  return *this;
}

OpDef& OpDef::RequiredAttr(const std::string& name, AttrValue example) {
  attr_defaults_[name] = std::move(example);
  attr_required_[name] = true;
  return *this;
}

OpDef& OpDef::InferShape(InferFn fn) {
  infer_ = std::move(fn);
  return *this;
}
OpDef& OpDef::Sbp(SbpFn fn) {
  sbp_ = std::move(fn);
  return *this;
}
OpDef& OpDef::NdSbpFilter(NdSbpFilterFn fn) {
  nd_sbp_filter_ = std::move(fn);
  return *this;
}
OpDef& OpDef::Cost(CostFn fn) {
  cost_ = std::move(fn);
  return *this;
}
OpDef& OpDef::Grad(GradFn fn) {
  grad_ = std::move(fn);
  return *this;
}
OpDef& OpDef::Doc(const std::string& doc) {
  doc_ = doc;
  return *this;
}

bool OpDef::is_mutable_input(int i) const {
  if (variadic_input_) return input_mutable_[0];
  return i >= 0 && i < static_cast<int>(input_mutable_.size()) && input_mutable_[i];
}

Status OpDef::CompleteAttrs(OpContext* ctx) const {
  const std::string where = ctx->where();
  if (variadic_input_) {
    OFL_ENSURE(ctx->num_inputs() >= 1, where, ": expects at least one input, got 0");
  } else if (num_required_inputs_ == static_cast<int>(input_names_.size())) {
    OFL_ENSURE(ctx->num_inputs() == static_cast<int>(input_names_.size()), where, ": expects ",
               input_names_.size(), " inputs, got ", ctx->num_inputs());
  } else {
    OFL_ENSURE(ctx->num_inputs() >= num_required_inputs_ &&
                   ctx->num_inputs() <= static_cast<int>(input_names_.size()),
               where, ": expects ", num_required_inputs_, " to ", input_names_.size(),
               " inputs, got ", ctx->num_inputs());
  }
  AttrMap complete;
  for (const auto& [name, value] : ctx->attrs.values()) {
    auto it = attr_defaults_.find(name);
    OFL_ENSURE(it != attr_defaults_.end(), where, ": unknown attribute '", name, "'");
    AttrValue v = value;
    if (std::holds_alternative<double>(it->second) && std::holds_alternative<int64_t>(v)) {
      v = static_cast<double>(std::get<int64_t>(v));
    }
    if (std::holds_alternative<std::vector<double>>(it->second) &&
        std::holds_alternative<std::vector<int64_t>>(v)) {
      const auto& ints = std::get<std::vector<int64_t>>(v);
      v = std::vector<double>(ints.begin(), ints.end());
    }
    OFL_ENSURE(SameAttrType(it->second, v), where, ": attribute '", name, "' must be ",
               AttrTypeName(it->second), ", got ", AttrTypeName(v), " ", AttrToString(v));
    complete.Set(name, v);
  }
  for (const auto& [name, value] : attr_defaults_) {
    if (complete.Has(name)) continue;
    OFL_ENSURE(!attr_required_.at(name), where, ": attribute '", name, "' is required");
    complete.Set(name, value);
  }
  ctx->attrs = complete;
  return Status::OK();
}

Maybe<std::vector<TensorDesc>> OpDef::Infer(OpContext* ctx) const {
  OFL_RETURN_IF_ERROR(CompleteAttrs(ctx));
  for (int i = 0; i < ctx->num_inputs(); ++i) {
    const TensorDesc& in = ctx->input(i);
    OFL_RETURN_IF_ERROR(
        CheckShape(in.shape, in.dtype, ctx->where() + ": input " + ArgName(*this, i)));
  }
  CHECK(infer_) << type_ << " has no InferShape";
  OFL_ASSIGN_OR_RETURN(std::vector<TensorDesc> outs, infer_(*ctx));
  // Inference multiplies sizes given by the user (shape attrs, broadcast
  // batch axes, embedding widths): the outputs must fit int64 too.
  for (size_t o = 0; o < outs.size(); ++o) {
    const std::string name = o < output_names_.size() ? output_names_[o] : std::to_string(o);
    OFL_RETURN_IF_ERROR(
        CheckShape(outs[o].shape, outs[o].dtype, ctx->where() + ": output " + name));
  }
  return outs;
}

std::vector<SbpSignature> OpDef::SbpSignatures(const OpContext& ctx) const {
  return sbp_ ? sbp_(ctx) : std::vector<SbpSignature>{};
}

bool OpDef::AcceptsNdSbp(const OpContext& ctx, const std::vector<NdSbp>& inputs,
                         const std::vector<NdSbp>& outputs) const {
  return !nd_sbp_filter_ || ctx.hierarchy.empty() || nd_sbp_filter_(ctx, inputs, outputs);
}

OpCost OpDef::EstimateCost(const OpContext& ctx, const std::vector<TensorDesc>& outputs) const {
  if (cost_) return cost_(ctx, outputs);
  OpCost cost;
  for (const TensorDesc& d : outputs) {
    cost.flops += static_cast<double>(d.shape.NumElements());
    cost.memory_bytes = SaturatingAdd(cost.memory_bytes, d.nbytes());
  }
  return cost;
}

OpDef& OpRegistry::Register(const std::string& type) {
  auto [it, inserted] = Registry().emplace(type, OpDef(type));
  CHECK(inserted) << "op '" << type << "' registered twice";
  return it->second;
}

Maybe<const OpDef*> OpRegistry::Find(const std::string& type) {
  auto it = Registry().find(type);
  if (it == Registry().end()) return NotFound("unknown op '", type, "'");
  return &it->second;
}

std::vector<std::string> OpRegistry::ListOps() {
  std::vector<std::string> names;
  for (const auto& [name, def] : Registry()) names.push_back(name);
  return names;
}

std::string ArgName(const OpDef& def, int i) {
  if (def.variadic_input()) return def.input_names()[0] + "[" + std::to_string(i) + "]";
  const int n = static_cast<int>(def.input_names().size());
  // An extra input (the arity is checked after the names are resolved).
  if (i < 0 || i >= n) return "#" + std::to_string(i) + " (the op takes " + std::to_string(n) + ")";
  return def.input_names()[i];
}

}  // namespace ofl
