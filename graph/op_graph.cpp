#include "graph/op_graph.h"

#include <sstream>

namespace ofl {

proto::TensorDescProto DescToProto(const TensorDesc& desc) {
  proto::TensorDescProto p;
  for (int64_t d : desc.shape.dims()) p.mutable_shape()->add_dims(d);
  p.set_dtype(DataTypeName(desc.dtype));
  return p;
}

Maybe<TensorDesc> DescFromProto(const proto::TensorDescProto& p) {
  TensorDesc d;
  d.shape = Shape(std::vector<int64_t>(p.shape().dims().begin(), p.shape().dims().end()));
  OFL_ASSIGN_OR_RETURN(d.dtype, ParseDataType(p.dtype()));
  return d;
}

Status OpGraph::CheckNewName(const std::string& name) const {
  OFL_ENSURE(!name.empty(), "tensor name is empty");
  OFL_ENSURE(descs_.count(name) == 0, "tensor '", name, "' already exists in the graph");
  return Status::OK();
}

Status OpGraph::AddInput(const std::string& name, const TensorDesc& desc) {
  OFL_RETURN_IF_ERROR(CheckNewName(name));
  OFL_RETURN_IF_ERROR(CheckShape(desc.shape, desc.dtype, "input '" + name + "'"));
  descs_[name] = desc;
  inputs_[name] = desc;
  input_order_.push_back(name);
  return Status::OK();
}

Status OpGraph::AddVariable(const std::string& name, const Tensor& init, bool trainable) {
  OFL_RETURN_IF_ERROR(CheckNewName(name));
  OFL_RETURN_IF_ERROR(CheckShape(init.shape(), init.dtype(), "variable '" + name + "'"));
  OFL_ENSURE(!trainable || IsFloating(init.dtype()), "variable '", name,
             "': a trainable variable must be floating point, got ", DataTypeName(init.dtype()));
  TensorDesc desc{init.shape(), init.dtype()};
  descs_[name] = desc;
  variables_[name] = VariableInfo{desc, trainable, init.Clone()};
  variable_order_.push_back(name);
  return Status::OK();
}

Status OpGraph::AddVariable(const std::string& name, const TensorDesc& desc, bool trainable) {
  OFL_RETURN_IF_ERROR(CheckNewName(name));
  OFL_ENSURE(!trainable || IsFloating(desc.dtype), "variable '", name,
             "': a trainable variable must be floating point, got ", DataTypeName(desc.dtype));
  OFL_RETURN_IF_ERROR(CheckShape(desc.shape, desc.dtype, "variable '" + name + "'"));
  descs_[name] = desc;
  VariableInfo info{desc, trainable, Tensor()};
  info.lazy = true;
  variables_[name] = std::move(info);
  variable_order_.push_back(name);
  return Status::OK();
}

Maybe<Tensor> OpGraph::InitialValue(const std::string& name) const {
  auto it = variables_.find(name);
  OFL_ENSURE(it != variables_.end(), "graph: no variable '", name, "'");
  OFL_ENSURE(!it->second.lazy, "variable '", name,
             "' was declared without an initial value "
             "(lazy, for planning only); give it a value to run the graph");
  return it->second.init;
}

std::string OpGraph::UniqueOpName(const std::string& type) {
  std::string name;
  do {
    name = type + "_" + std::to_string(name_counters_[type]++);
  } while (op_names_.count(name) > 0);
  return name;
}

Maybe<std::vector<std::string>> OpGraph::AddOp(const std::string& type,
                                               const std::vector<std::string>& inputs,
                                               const AttrMap& attrs, const std::string& name) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(type));
  OpContext ctx;
  ctx.op_type = type;
  ctx.op_name = name;
  ctx.attrs = attrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = descs_.find(inputs[i]);
    OFL_ENSURE(it != descs_.end(), ctx.where(), ": input ", ArgName(*def, static_cast<int>(i)),
               " names an unknown tensor '", inputs[i], "'");
    ctx.inputs.push_back(it->second);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (def->is_mutable_input(static_cast<int>(i))) {
      OFL_ENSURE(IsVariable(inputs[i]), ctx.where(), ": input ", ArgName(*def, i),
                 " is written in place and must be a variable, got '", inputs[i], "'");
    }
  }
  OFL_ENSURE(name.empty() || op_names_.count(name) == 0, ctx.where(), ": op name '", name,
             "' is already used");
  OFL_ASSIGN_OR_RETURN(std::vector<TensorDesc> out_descs, def->Infer(&ctx));
  CHECK_EQ(out_descs.size(), def->output_names().size()) << type << " inferred a wrong arity";
  OpNode node;
  node.name = name.empty() ? UniqueOpName(type) : name;
  node.type = type;
  node.inputs = inputs;
  node.attrs = ctx.attrs;
  for (size_t i = 0; i < out_descs.size(); ++i) {
    // A tensor the user named "<op>/<arg>_0" (an input, a variable) would be
    // overwritten: refuse the op before anything changes.
    node.outputs.push_back(node.name + "/" + def->output_names()[i] + "_0");
    OFL_ENSURE(descs_.count(node.outputs.back()) == 0, ctx.where(), ": output tensor '",
               node.outputs.back(), "' already exists in the graph");
  }
  for (size_t i = 0; i < out_descs.size(); ++i) descs_[node.outputs[i]] = out_descs[i];
  op_names_.insert(node.name);
  ops_.push_back(node);
  return node.outputs;
}

Maybe<TensorDesc> OpGraph::Desc(const std::string& name) const {
  auto it = descs_.find(name);
  if (it == descs_.end()) return NotFound("unknown tensor '", name, "'");
  return it->second;
}

OpContext OpGraph::ContextOf(const OpNode& node) const {
  OpContext ctx;
  ctx.op_type = node.type;
  ctx.op_name = node.name;
  ctx.attrs = node.attrs;
  for (const std::string& in : node.inputs) ctx.inputs.push_back(descs_.at(in));
  return ctx;
}

Status OpGraph::SetLoss(const std::string& name) {
  OFL_ASSIGN_OR_RETURN(TensorDesc d, Desc(name));
  OFL_ENSURE(d.shape.NumElements() == 1 && IsFloating(d.dtype), "loss '", name,
             "' must be a floating scalar, got shape ", d.shape, " ", DataTypeName(d.dtype));
  loss_ = name;
  return Status::OK();
}

proto::Job OpGraph::ToJob() const {
  proto::Job job;
  for (const std::string& n : input_order_) {
    auto* in = job.add_inputs();
    in->set_name(n);
    *in->mutable_desc() = DescToProto(inputs_.at(n));
  }
  for (const std::string& n : variable_order_) {
    auto* v = job.add_variables();
    v->set_name(n);
    *v->mutable_desc() = DescToProto(variables_.at(n).desc);
    v->set_trainable(variables_.at(n).trainable);
  }
  for (const OpNode& node : ops_) {
    auto* op = job.add_ops();
    op->set_name(node.name);
    op->set_op_type(node.type);
    for (const auto& i : node.inputs) op->add_inputs(i);
    for (const auto& o : node.outputs) op->add_outputs(o);
    for (const auto& [k, v] : node.attrs.values()) (*op->mutable_attrs())[k] = AttrToProto(v);
  }
  for (const auto& [n, d] : descs_) (*job.mutable_tensors())[n] = DescToProto(d);
  job.set_loss(loss_);
  return job;
}

Maybe<OpGraph> OpGraph::FromJob(const proto::Job& job) {
  OpGraph g;
  for (const auto& in : job.inputs()) {
    OFL_ASSIGN_OR_RETURN(TensorDesc d, DescFromProto(in.desc()));
    OFL_RETURN_IF_ERROR(g.AddInput(in.name(), d));
  }
  for (const auto& v : job.variables()) {
    OFL_ASSIGN_OR_RETURN(TensorDesc d, DescFromProto(v.desc()));
    OFL_RETURN_IF_ERROR(CheckAllocation(d.shape, d.dtype, "job variable '" + v.name() + "'"));
    OFL_RETURN_IF_ERROR(g.AddVariable(v.name(), d, v.trainable()));  // lazy: a Job holds no values
  }
  for (const auto& op : job.ops()) {
    AttrMap attrs;
    for (const auto& [k, v] : op.attrs()) {
      OFL_ENSURE(v.value_case() != proto::AttrValue::VALUE_NOT_SET, "job op '", op.name(), "' (",
                 op.op_type(), "): attribute '", k, "' has no value");
      attrs.Set(k, AttrFromProto(v));
    }
    std::vector<std::string> inputs(op.inputs().begin(), op.inputs().end());
    OFL_ASSIGN_OR_RETURN(std::vector<std::string> outs,
                         g.AddOp(op.op_type(), inputs, attrs, op.name()));
    OFL_ENSURE(static_cast<int>(outs.size()) == op.outputs_size(), "job op '", op.name(),
               "' lists ", op.outputs_size(), " outputs, the registry infers ", outs.size());
  }
  if (!job.loss().empty()) OFL_RETURN_IF_ERROR(g.SetLoss(job.loss()));
  return g;
}

std::string OpGraph::ToString() const {
  std::ostringstream out;
  for (const std::string& n : input_order_) {
    out << "input " << n << " " << inputs_.at(n).shape << " " << DataTypeName(inputs_.at(n).dtype)
        << "\n";
  }
  for (const std::string& n : variable_order_) {
    const VariableInfo& v = variables_.at(n);
    out << (v.trainable ? "param " : "state ") << n << " " << v.desc.shape << " "
        << DataTypeName(v.desc.dtype) << "\n";
  }
  for (const OpNode& node : ops_) {
    out << node.name << " = " << node.type << "(";
    for (size_t i = 0; i < node.inputs.size(); ++i) out << (i ? ", " : "") << node.inputs[i];
    out << ") " << node.attrs.ToString() << " -> ";
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const TensorDesc& d = descs_.at(node.outputs[i]);
      out << (i ? ", " : "") << d.shape << " " << DataTypeName(d.dtype);
    }
    out << "\n";
  }
  if (!loss_.empty()) out << "loss " << loss_ << "\n";
  return out.str();
}

}  // namespace ofl
