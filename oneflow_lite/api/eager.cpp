#include "oneflow_lite/api/eager.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <type_traits>
#include <variant>

#include "graph/autodiff.h"
#include "graph/op_graph.h"
#include "oneflow_lite/api/eager_devices.h"
#include "oneflow_lite/core/device_backend.h"
#include "ops/kernel.h"
#include "ops/op_registry.h"

namespace ofl {

struct EagerExecutor::Kernel {
  std::string op_type;
  std::string op_name;  // the prefix of the kernel's messages (KernelContext::where)
  const KernelFn* fn = nullptr;
  AttrMap attrs;  // complete: defaults filled in
  std::vector<TensorDesc> outputs;
  std::vector<bool> mutable_inputs;  // per input
};

struct EagerExecutor::GradProgram {
  struct Step {
    Kernel kernel;
    std::vector<int> inputs;   // slots
    std::vector<int> outputs;  // slots
  };
  int num_slots = 0;
  std::vector<int> arg_slots;    // per op input
  std::vector<int> seed_slots;   // per op output: its gradient's slot, -1 when none flows
  std::vector<int> fetch_slots;  // per op input: its gradient's slot, -1 when it has none
  std::vector<Step> steps;       // graph order, only what the gradients need
  bool forward_first = false;    // steps[0] is the op itself, writing no input in place
};

namespace {

// ---- cache keys: exact bytes of everything a miss depends on ----------------

template <typename T>
void AppendPod(std::string* key, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  key->append(reinterpret_cast<const char*>(&v), sizeof v);
}

void AppendString(std::string* key, const std::string& s) {
  AppendPod(key, s.size());
  key->append(s);
}

template <typename T>
void AppendVector(std::string* key, const std::vector<T>& v) {
  AppendPod(key, v.size());
  key->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

void AppendTensor(std::string* key, const Tensor& t) {
  AppendPod(key, static_cast<int8_t>(t.defined() ? static_cast<int>(t.dtype()) : -1));
  AppendVector(key, t.shape().dims());
}

void AppendAttrs(std::string* key, const AttrMap& attrs) {
  AppendPod(key, attrs.values().size());
  for (const auto& [name, value] : attrs.values()) {
    AppendString(key, name);
    AppendPod(key, static_cast<uint8_t>(value.index()));
    std::visit(
        [key](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::string>) {
            AppendString(key, v);
          } else if constexpr (std::is_trivially_copyable_v<V>) {
            AppendPod(key, v);  // doubles by their bits: 1e-3 and its neighbour differ
          } else {
            AppendVector(key, v);
          }
        },
        value);
  }
}

std::string OpKey(const std::string& op_type, const Device& device,
                  const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  std::string key;
  AppendString(&key, op_type);
  AppendPod(&key, static_cast<int8_t>(device.type));
  AppendPod(&key, device.index);
  AppendPod(&key, inputs.size());
  for (const Tensor& t : inputs) AppendTensor(&key, t);
  AppendAttrs(&key, attrs);
  return key;
}

// ---- a miss: validation, inference and lookup, as a one-op graph makes them -

std::string ArgTensorName(size_t i) { return "arg" + std::to_string(i); }

Status CheckDefined(const OpDef& def, const std::string& op_type,
                    const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    OFL_ENSURE(inputs[i].defined(), op_type, ": input ", ArgName(def, static_cast<int>(i)),
               " is missing");
  }
  return Status::OK();
}

// The op named after its type, as a one-op graph names it: messages read
// "matmul: ..." (OpContext::where).
Maybe<EagerExecutor::Kernel> MakeKernel(const std::string& op_type, DeviceType device,
                                        const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(op_type));
  OFL_RETURN_IF_ERROR(CheckDefined(*def, op_type, inputs));
  OpContext ctx;
  ctx.op_type = op_type;
  ctx.op_name = op_type;
  ctx.attrs = attrs;
  for (const Tensor& t : inputs) ctx.inputs.push_back({t.shape(), t.dtype()});
  EagerExecutor::Kernel k;
  OFL_ASSIGN_OR_RETURN(k.outputs, def->Infer(&ctx));
  CHECK_EQ(k.outputs.size(), def->output_names().size()) << op_type << " inferred a wrong arity";
  for (size_t i = 0; i < k.outputs.size(); ++i) {  // refuse absurd allocations first
    const std::string name = op_type + "/" + def->output_names()[i] + "_0";
    OFL_RETURN_IF_ERROR(CheckAllocation(k.outputs[i].shape, k.outputs[i].dtype,
                                        op_type + ": output '" + name + "'"));
  }
  OFL_ASSIGN_OR_RETURN(k.fn, KernelRegistry::Find(op_type, device));
  k.op_type = op_type;
  k.op_name = op_type;
  k.attrs = std::move(ctx.attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    k.mutable_inputs.push_back(def->is_mutable_input(static_cast<int>(i)));
  }
  return k;
}

// A graph whose inputs are variables (trainable when floating) feeding one
// op, plus its backward for the output gradients given: the graph an eager
// gradient is defined by. Returns the op's output names.
Maybe<std::vector<std::string>> BuildGradGraph(OpGraph* g, const std::string& op_type,
                                               const std::vector<Tensor>& inputs,
                                               const AttrMap& attrs,
                                               const std::vector<Tensor>& output_grads,
                                               std::map<std::string, std::string>* grads) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find(op_type));
  OFL_RETURN_IF_ERROR(CheckDefined(*def, op_type, inputs));
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc d{inputs[i].shape(), inputs[i].dtype()};
    OFL_RETURN_IF_ERROR(g->AddVariable(ArgTensorName(i), d, IsFloating(d.dtype)));
    names.push_back(ArgTensorName(i));
  }
  OFL_ASSIGN_OR_RETURN(std::vector<std::string> outs, g->AddOp(op_type, names, attrs, op_type));
  OFL_ENSURE(output_grads.size() == outs.size(), op_type, ": ", output_grads.size(),
             " output gradients given for ", outs.size(), " outputs");
  std::map<std::string, std::string> seeds;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!output_grads[i].defined() || output_grads[i].numel() == 0) continue;
    const std::string name = "grad_of_out" + std::to_string(i);
    OFL_RETURN_IF_ERROR(g->AddInput(name, {output_grads[i].shape(), output_grads[i].dtype()}));
    seeds[outs[i]] = name;
  }
  OFL_ASSIGN_OR_RETURN(*grads, AppendBackward(g, seeds));
  return outs;
}

// The ops of `g` that `wanted` tensors depend on, in graph order; an op that
// writes an input in place is always kept.
std::vector<const OpNode*> NeededOps(const OpGraph& g, std::set<std::string> wanted) {
  std::vector<const OpNode*> kept;
  for (auto it = g.ops().rbegin(); it != g.ops().rend(); ++it) {
    const OpDef* def = OpRegistry::Find(it->type).value();
    bool keep = std::any_of(it->outputs.begin(), it->outputs.end(),
                            [&](const std::string& o) { return wanted.count(o) > 0; });
    for (size_t i = 0; i < it->inputs.size(); ++i) {
      keep = keep || def->is_mutable_input(static_cast<int>(i));
    }
    if (!keep) continue;
    wanted.insert(it->inputs.begin(), it->inputs.end());
    kept.push_back(&*it);
  }
  std::reverse(kept.begin(), kept.end());
  return kept;
}

Maybe<EagerExecutor::GradProgram> MakeGradProgram(const std::string& op_type, DeviceType device,
                                                  const std::vector<Tensor>& inputs,
                                                  const AttrMap& attrs,
                                                  const std::vector<Tensor>& output_grads) {
  OpGraph g;
  std::map<std::string, std::string> grads;
  OFL_ASSIGN_OR_RETURN(std::vector<std::string> outs,
                       BuildGradGraph(&g, op_type, inputs, attrs, output_grads, &grads));
  EagerExecutor::GradProgram p;
  std::map<std::string, int> slots;
  auto slot = [&](const std::string& name) {
    return slots.emplace(name, static_cast<int>(slots.size())).first->second;
  };
  for (size_t i = 0; i < inputs.size(); ++i) p.arg_slots.push_back(slot(ArgTensorName(i)));
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string seed = "grad_of_out" + std::to_string(i);
    p.seed_slots.push_back(g.HasTensor(seed) ? slot(seed) : -1);
  }
  std::set<std::string> wanted;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = grads.find(ArgTensorName(i));
    p.fetch_slots.push_back(it == grads.end() ? -1 : slot(it->second));
    if (it != grads.end()) wanted.insert(it->second);
  }
  const std::vector<const OpNode*> needed = NeededOps(g, wanted);
  p.forward_first = !needed.empty() && needed[0] == &g.ops()[0];
  for (const OpNode* node : needed) {
    EagerExecutor::GradProgram::Step step;
    EagerExecutor::Kernel& k = step.kernel;
    OFL_ASSIGN_OR_RETURN(k.fn, KernelRegistry::Find(node->type, device));
    const OpDef* def = OpRegistry::Find(node->type).value();
    k.op_type = node->type;
    k.op_name = node->name;
    k.attrs = node->attrs;
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      step.inputs.push_back(slot(node->inputs[i]));
      k.mutable_inputs.push_back(def->is_mutable_input(static_cast<int>(i)));
    }
    for (const std::string& out : node->outputs) {
      k.outputs.push_back(g.Desc(out).value());
      step.outputs.push_back(slot(out));
    }
    p.steps.push_back(std::move(step));
  }
  if (p.forward_first) {
    const auto& writes = p.steps[0].kernel.mutable_inputs;
    p.forward_first = std::none_of(writes.begin(), writes.end(), [](bool w) { return w; });
  }
  p.num_slots = static_cast<int>(slots.size());
  return p;
}

// ---- a call: allocate, call ---------------------------------------------------

bool Matches(const std::vector<Tensor>& tensors, const std::vector<TensorDesc>& descs,
             const Device& device) {
  if (tensors.size() != descs.size()) return false;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const bool here = device.is_host() ? t.device().is_host() : t.device() == device;
    if (!t.defined() || !here || t.shape() != descs[i].shape || t.dtype() != descs[i].dtype) {
      return false;
    }
  }
  return true;
}

// A copy of `t` the kernel may write: on the host, or on the lane's device.
Maybe<Tensor> CloneFor(EagerLane* lane, const Tensor& t) {
  if (lane == nullptr) return t.Clone();
  return lane->CloneHere(t);
}

// The kernel on `ins` (mutable ones already copies the kernel may write)
// into fresh outputs. Without a lane: on cpu:0 with no stream, on this
// thread. With one (the caller holds its mu): on its device and stream,
// finished before returning (EagerDevices: a device-side error fails the call).
Maybe<std::vector<Tensor>> Invoke(const EagerExecutor::Kernel& k, std::vector<Tensor*> ins,
                                  EagerLane* lane) {
  std::vector<Tensor> outs;
  outs.reserve(k.outputs.size());
  for (const TensorDesc& d : k.outputs) {
    if (lane == nullptr) {
      outs.emplace_back(d.shape, d.dtype);
    } else {
      OFL_ASSIGN_OR_RETURN(Tensor t, lane->NewTensor(d.shape, d.dtype));
      outs.push_back(std::move(t));
    }
  }
  KernelContext kc;
  kc.op_type = k.op_type;
  kc.op_name = k.op_name;
  kc.attrs = &k.attrs;
  kc.inputs = std::move(ins);
  for (Tensor& t : outs) kc.outputs.push_back(&t);
  if (!outs.empty()) {
    kc.logical_shape = outs[0].shape();
    kc.logical_offset.assign(kc.logical_shape.ndim(), 0);
  }
  if (lane == nullptr) {
    kc.device = Device{DeviceType::kCPU, 0};
    kc.stream = nullptr;
    OFL_RETURN_IF_ERROR(CallKernel(*k.fn, kc));
    return outs;
  }
  kc.device = lane->context->device();
  kc.stream = lane->stream.get();
  kc.stream->BindToThread();
  const Status called = CallKernel(*k.fn, kc);
  const Status finished = lane->context->Finish(kc.stream);  // waits; its device-side error
  OFL_RETURN_IF_ERROR(called);
  OFL_RETURN_IF_ERROR(finished);
  return outs;
}

// "input 'b'" (the op's name for input i), or "input i" for an unknown op.
// Holds a reference to `op_type` (no copy on the eager hot path): use it
// within the call that owns the string.
std::function<std::string(size_t)> InputNamer(const std::string& op_type) {
  return [&op_type](size_t i) {
    Maybe<const OpDef*> def = OpRegistry::Find(op_type);
    if (!def.ok()) return "input " + std::to_string(i);
    return "input '" + ArgName(*def.value(), static_cast<int>(i)) + "'";
  };
}

}  // namespace

EagerExecutor::EagerExecutor(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)), devices_(std::make_unique<EagerDevices>()) {}
EagerExecutor::~EagerExecutor() = default;

template <typename T>
std::shared_ptr<const T> EagerExecutor::Find(const Cache<T>& cache, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache.find(key);
  if (it == cache.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return it->second;
}

template <typename T>
void EagerExecutor::Insert(Cache<T>* cache, const std::string& key,
                           std::shared_ptr<const T> value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cache->size() >= capacity_) cache->clear();  // callers hold their entries' shared_ptrs
  cache->emplace(key, std::move(value));
}

Maybe<std::vector<Tensor>> EagerExecutor::Run(const std::string& op_type,
                                              const std::vector<Tensor>& inputs,
                                              const AttrMap& attrs) {
  return Call(op_type, inputs, attrs, /*in_place=*/false);
}

Maybe<std::vector<Tensor>> EagerExecutor::RunInPlace(const std::string& op_type,
                                                     const std::vector<Tensor>& inputs,
                                                     const AttrMap& attrs) {
  return Call(op_type, inputs, attrs, /*in_place=*/true);
}

Maybe<std::vector<Tensor>> EagerExecutor::Call(const std::string& op_type,
                                               const std::vector<Tensor>& inputs,
                                               const AttrMap& attrs, bool in_place) {
  OFL_ASSIGN_OR_RETURN(const Device device, CommonDevice(op_type, InputNamer(op_type), inputs));
  EagerLane* lane = nullptr;
  if (!device.is_host()) {
    OFL_ASSIGN_OR_RETURN(lane, devices_->Get(device));
  }
  std::unique_lock<std::mutex> lane_lock;
  if (lane != nullptr) lane_lock = std::unique_lock<std::mutex>(lane->mu);
  const std::string key = OpKey(op_type, device, inputs, attrs);
  std::shared_ptr<const Kernel> k = Find(forward_, key);
  if (k == nullptr) {
    OFL_ASSIGN_OR_RETURN(Kernel made, MakeKernel(op_type, device.type, inputs, attrs));
    k = std::make_shared<const Kernel>(std::move(made));
    Insert(&forward_, key, k);
  }
  std::vector<Tensor> args(inputs.size());
  std::vector<Tensor*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (k->mutable_inputs[i] && !in_place) {
      OFL_ASSIGN_OR_RETURN(args[i], CloneFor(lane, inputs[i]));
    } else {
      args[i] = inputs[i];
    }
    ins.push_back(&args[i]);
  }
  OFL_ASSIGN_OR_RETURN(std::vector<Tensor> results, Invoke(*k, std::move(ins), lane));
  for (size_t i = 0; i < args.size() && !in_place; ++i) {
    if (k->mutable_inputs[i]) results.push_back(args[i]);
  }
  return results;
}

Maybe<std::vector<Tensor>> EagerExecutor::RunGrad(const std::string& op_type,
                                                  const std::vector<Tensor>& inputs,
                                                  const AttrMap& attrs,
                                                  const std::vector<Tensor>& output_grads,
                                                  const std::vector<Tensor>& forward_outputs) {
  OFL_ASSIGN_OR_RETURN(const Device device,
                       CommonDevice(op_type, InputNamer(op_type), inputs, output_grads));
  EagerLane* lane = nullptr;
  if (!device.is_host()) {
    OFL_ASSIGN_OR_RETURN(lane, devices_->Get(device));
  }
  std::unique_lock<std::mutex> lane_lock;
  if (lane != nullptr) lane_lock = std::unique_lock<std::mutex>(lane->mu);
  std::string key = OpKey(op_type, device, inputs, attrs);
  AppendPod(&key, output_grads.size());
  for (const Tensor& t : output_grads) {
    AppendPod(&key, t.defined() && t.numel() > 0);
    AppendTensor(&key, t);
  }
  std::shared_ptr<const GradProgram> p = Find(backward_, key);
  if (p == nullptr) {
    OFL_ASSIGN_OR_RETURN(GradProgram made,
                         MakeGradProgram(op_type, device.type, inputs, attrs, output_grads));
    p = std::make_shared<const GradProgram>(std::move(made));
    Insert(&backward_, key, p);
  }
  std::vector<Tensor> values(p->num_slots);
  std::vector<bool> given(p->num_slots, false);  // the caller's tensors
  auto give = [&](int slot, const Tensor& t) {
    values[slot] = t;
    given[slot] = true;
  };
  for (size_t i = 0; i < inputs.size(); ++i) give(p->arg_slots[i], inputs[i]);
  for (size_t i = 0; i < output_grads.size(); ++i) {
    if (p->seed_slots[i] >= 0) give(p->seed_slots[i], output_grads[i]);
  }
  size_t first = 0;
  if (p->forward_first && Matches(forward_outputs, p->steps[0].kernel.outputs, device)) {
    for (size_t i = 0; i < forward_outputs.size(); ++i) {
      give(p->steps[0].outputs[i], forward_outputs[i]);
    }
    first = 1;  // the op's outputs are known: it need not run again
  }
  for (size_t s = first; s < p->steps.size(); ++s) {
    const GradProgram::Step& step = p->steps[s];
    std::vector<Tensor> args(step.inputs.size());
    std::vector<Tensor*> ins;
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      // Never on the caller's tensors: a mutable input is written on a copy.
      const Tensor& v = values[step.inputs[i]];
      if (step.kernel.mutable_inputs[i]) {
        OFL_ASSIGN_OR_RETURN(args[i], CloneFor(lane, v));
      } else {
        args[i] = v;
      }
      ins.push_back(&args[i]);
    }
    OFL_ASSIGN_OR_RETURN(std::vector<Tensor> outs, Invoke(step.kernel, std::move(ins), lane));
    for (size_t i = 0; i < outs.size(); ++i) values[step.outputs[i]] = std::move(outs[i]);
    for (size_t i = 0; i < args.size(); ++i) {
      if (step.kernel.mutable_inputs[i]) values[step.inputs[i]] = args[i];
    }
  }
  // Fresh tensors only: a gradient that is a given tensor (an output
  // gradient passed through) is copied.
  std::vector<Tensor> per_input(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int s = p->fetch_slots[i];
    if (s < 0) continue;
    if (given[s]) {
      OFL_ASSIGN_OR_RETURN(per_input[i], CloneFor(lane, values[s]));
    } else {
      per_input[i] = values[s];
    }
  }
  return per_input;
}

Maybe<Tensor> EagerExecutor::ToDevice(const Tensor& tensor, const Device& device) {
  if (!device.is_host()) OFL_RETURN_IF_ERROR(devices_->Get(device).status());
  return CopyToDevice(devices_.get(), tensor, device);
}

Tensor HostCopy(const Tensor& tensor) {
  if (tensor.device().is_host()) return tensor.Clone();
  // A context of the tensor's device (it exists: the tensor was made on it).
  return CreateDeviceContext(tensor.device()).value()->CloneToHost(tensor);
}

EagerStats EagerExecutor::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {hits_, misses_, static_cast<int64_t>(forward_.size() + backward_.size())};
}

void EagerExecutor::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  forward_.clear();
  backward_.clear();
}

}  // namespace ofl
