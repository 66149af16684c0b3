// oneflow_lite._C: the pybind11 binding over api/. It exposes Program (a
// logical graph under construction), Session (a compiled, runnable graph)
// and the one-op tools the op test table uses. numpy arrays are copied in
// and out; every error becomes a Python exception naming the culprit.
#include <pybind11/stl.h>

#include "convert.h"
#include "device_tensor.h"
#include "oneflow_lite/api/devices.h"
#include "oneflow_lite/api/eager.h"
#include "oneflow_lite/api/op_tools.h"
#include "oneflow_lite/api/session.h"

namespace ofl::python {
namespace {

std::vector<Tensor> TensorsFromList(const std::vector<py::object>& arrays,
                                    const std::string& what) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].is_none()) {
      out.emplace_back();
    } else {
      out.push_back(
          TensorFromArray(arrays[i].cast<py::array>(), what + " argument " + std::to_string(i)));
    }
  }
  return out;
}

// Eager inputs: views of the arrays (kernels only read them; mutable ones
// are copied before the kernel writes them).
std::vector<Tensor> TensorViewsOfList(const std::vector<py::object>& arrays,
                                      const std::string& what) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].is_none()) {
      out.emplace_back();
    } else {
      out.push_back(
          TensorViewOfArray(arrays[i].cast<py::array>(), what + " argument " + std::to_string(i)));
    }
  }
  return out;
}

// Copies (a Session's fetches may share its registers' buffers).
py::list ArraysOrNone(const std::vector<Tensor>& tensors) {
  py::list out;
  for (const Tensor& t : tensors) {
    if (t.defined()) {
      out.append(ArrayFromTensor(t));
    } else {
      out.append(py::none());
    }
  }
  return out;
}

// Results of a one-op call: fresh tensors no one else holds, handed over to
// numpy without a copy.
py::list FreshArraysOrNone(const std::vector<Tensor>& tensors) {
  py::list out;
  for (const Tensor& t : tensors) {
    if (t.defined()) {
      out.append(ArrayOwningTensor(t));
    } else {
      out.append(py::none());
    }
  }
  return out;
}

std::vector<TensorDesc> DescsFromList(
    const std::vector<std::pair<std::vector<int64_t>, std::string>>& in) {
  std::vector<TensorDesc> out;
  for (const auto& [dims, dtype] : in) out.push_back({Shape(dims), Unwrap(ParseDataType(dtype))});
  return out;
}

OptimizerConf OptimizerFromArgs(const std::string& kind, const py::dict& hyper) {
  OptimizerConf c;
  c.kind = kind;
  for (auto item : hyper) {
    std::string k = py::str(item.first);
    if (k == "lr_input") {  // the name of a fed scalar that sets lr every step
      c.lr_input = py::str(item.second);
      continue;
    }
    double v = item.second.cast<double>();
    if (k == "lr")
      c.lr = v;
    else if (k == "momentum")
      c.momentum = v;
    else if (k == "weight_decay")
      c.weight_decay = v;
    else if (k == "beta1")
      c.beta1 = v;
    else if (k == "beta2")
      c.beta2 = v;
    else if (k == "eps")
      c.eps = v;
    else if (k == "clip_grad_max_norm")
      c.clip_grad_max_norm = v;
    else
      throw py::value_error("optimizer " + kind + ": unknown hyper-parameter '" + k + "'");
  }
  return c;
}

py::dict OpSchemaDict(const std::string& op_type) {
  const OpSchema schema = Unwrap(DescribeOp(op_type));
  py::dict d;
  d["name"] = schema.type;
  d["inputs"] = schema.inputs;
  d["variadic"] = schema.variadic_input;
  d["outputs"] = schema.outputs;
  py::dict attrs;
  for (const auto& [name, value] : schema.attrs) {
    attrs[py::str(name)] = value ? py::object(py::str(*value)) : py::object(py::none());
  }
  d["attrs"] = attrs;
  d["doc"] = schema.doc;
  d["has_grad"] = schema.has_grad;
  py::list mutable_inputs;  // indices of the inputs the kernel writes in place
  for (int i : schema.mutable_inputs) mutable_inputs.append(i);
  d["mutable_inputs"] = mutable_inputs;
  return d;
}

}  // namespace

// The eager frontend's executor (api/eager.h): _dispatch and _autograd hold
// one for the process; run_op and op_grad are its uncached twins.
void BindEager(py::module_& m) {
  BindDeviceTensor(m);
  py::class_<EagerExecutor>(m, "EagerExecutor")
      .def(py::init<size_t>(), py::arg("capacity") = 4096)
      .def(
          "run",  // inputs: numpy arrays or DeviceTensors (device_tensor.h)
          [](EagerExecutor& e, const std::string& op_type, const std::vector<py::object>& inputs,
             const py::dict& attrs) {
            bool device = false;
            std::vector<Tensor> ins = EagerInputs(inputs, op_type, &device);
            return EagerResults(Unwrap(e.Run(op_type, ins, AttrsFromDict(attrs, op_type))), device);
          },
          py::arg("op_type"), py::arg("inputs"), py::arg("attrs") = py::dict())
      .def(
          "run_in_place",  // the kernel writes the mutable inputs' buffers; returns the outputs
          [](EagerExecutor& e, const std::string& op_type, const std::vector<py::object>& inputs,
             const py::dict& attrs) {
            constexpr int kFlags = py::array::c_style | py::detail::npy_api::NPY_ARRAY_ALIGNED_ |
                                   py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
            for (size_t i = 0; i < inputs.size(); ++i) {
              if (py::isinstance<Tensor>(inputs[i])) continue;  // a DeviceTensor: its own buffer
              const py::array a = inputs[i].cast<py::array>();
              if ((a.flags() & kFlags) != kFlags) {
                throw py::value_error(op_type + ": run_in_place: input " + std::to_string(i) +
                                      " is not a writeable, aligned, C-contiguous array");
              }
            }
            bool device = false;
            std::vector<Tensor> ins = EagerInputs(inputs, op_type, &device);
            return EagerResults(Unwrap(e.RunInPlace(op_type, ins, AttrsFromDict(attrs, op_type))),
                                device);
          },
          py::arg("op_type"), py::arg("inputs"), py::arg("attrs") = py::dict())
      .def(
          "grad",
          [](EagerExecutor& e, const std::string& op_type, const std::vector<py::object>& inputs,
             const py::dict& attrs, const std::vector<py::object>& output_grads,
             const std::vector<py::object>& forward_outputs) {
            bool device = false;
            std::vector<Tensor> ins = EagerInputs(inputs, op_type, &device);
            std::vector<Tensor> grads = EagerInputs(output_grads, op_type, &device);
            std::vector<Tensor> outs = EagerInputs(forward_outputs, op_type, &device);
            return EagerResults(
                Unwrap(e.RunGrad(op_type, ins, AttrsFromDict(attrs, op_type), grads, outs)),
                device);
          },
          py::arg("op_type"), py::arg("inputs"), py::arg("attrs"), py::arg("output_grads"),
          py::arg("forward_outputs") = std::vector<py::object>{})
      .def(
          "to_device",  // a DeviceTensor holding a copy of `value` (array or DeviceTensor)
          [](EagerExecutor& e, const py::object& value, const std::string& device) {
            const Device target = Unwrap(Device::Parse(device));
            bool unused = false;
            std::vector<Tensor> in = EagerInputs({value}, "to_device", &unused);
            return py::cast(Unwrap(e.ToDevice(in[0], target)));
          },
          py::arg("value"), py::arg("device"))
      .def("stats",
           [](const EagerExecutor& e) {
             const EagerStats s = e.stats();
             py::dict d;
             d["hits"] = s.hits;
             d["misses"] = s.misses;
             d["entries"] = s.entries;
             return d;
           })
      .def("clear", &EagerExecutor::Clear);
}

void BindDistributed(py::module_& m);  // distributed.cpp
void BindGlobal(py::module_& m);       // global_tensor.cpp
void BindPlanning(py::module_& m);     // planning.cpp
void BindSearchers(py::module_& m);    // searchers.cpp
void BindSimulation(py::module_& m);   // simulation.cpp (after BindPlanning)

namespace {

// Program: a logical graph built from Python (the tracer's target).
void BindProgram(py::module_& m) {
  py::class_<Program>(m, "Program")
      .def(py::init<>())
      .def(
          "add_input",
          [](Program& p, const std::string& name, const std::vector<int64_t>& shape,
             const std::string& dtype) {
            ThrowIfError(p.graph().AddInput(name, {Shape(shape), Unwrap(ParseDataType(dtype))}));
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "float32")
      .def(
          "add_variable",
          [](Program& p, const std::string& name, const py::array& init, bool trainable) {
            ThrowIfError(p.graph().AddVariable(
                name, TensorFromArray(init, "variable '" + name + "'"), trainable));
          },
          py::arg("name"), py::arg("init"), py::arg("trainable") = true)
      .def(
          "add_op",
          [](Program& p, const std::string& type, const std::vector<std::string>& inputs,
             const py::dict& attrs, const std::string& name) {
            return Unwrap(p.graph().AddOp(type, inputs, AttrsFromDict(attrs, type), name));
          },
          py::arg("op_type"), py::arg("inputs"), py::arg("attrs") = py::dict(),
          py::arg("name") = "")
      .def(
          "minimize",
          [](Program& p, const std::string& loss, const std::string& optimizer,
             const py::dict& hyper) {
            ThrowIfError(p.Minimize(loss, OptimizerFromArgs(optimizer, hyper)));
          },
          py::arg("loss"), py::arg("optimizer") = "sgd", py::arg("hyper") = py::dict())
      .def("gradients", &Program::gradients)
      .def("shape",
           [](const Program& p, const std::string& name) {
             return Unwrap(p.graph().Desc(name)).shape.dims();
           })
      .def("dtype",
           [](const Program& p, const std::string& name) {
             return std::string(DataTypeName(Unwrap(p.graph().Desc(name)).dtype));
           })
      .def("variables", [](const Program& p) { return p.graph().variable_names(); })
      .def("num_ops", [](const Program& p) { return p.graph().ops().size(); })
      .def("job_bytes",
           [](const Program& p) { return py::bytes(p.graph().ToJob().SerializeAsString()); })
      .def("__str__", [](const Program& p) { return p.graph().ToString(); });
}

// Session: one device's compiled plan, run step by step. In Python as in
// C++ it is the one-rank DistributedSession: variables, anomaly detection and
// the plan come from there; its own are the constructor, run (a list of
// arrays) and peak_bytes (the device's, not per rank). Bound after
// DistributedSession, its base.
void BindSession(py::module_& m) {
  py::class_<Session, DistributedSession>(m, "Session")
      .def(py::init([](const Program& p, int num_threads, int64_t timeout_ms, bool transactional,
                       const std::string& trace_path, bool plan_memory) {
             SessionOptions options;
             options.num_threads = num_threads;
             options.timeout = std::chrono::milliseconds(timeout_ms);
             options.transactional = transactional;
             options.trace_path = trace_path;
             options.plan_memory = plan_memory;
             return Unwrap(Session::Create(p.graph(), options));
           }),
           py::arg("program"), py::arg("num_threads") = 0,
           py::arg("timeout_ms") = SessionOptions().timeout.count(),
           py::arg("transactional") = true, py::arg("trace_path") = "",
           py::arg("plan_memory") = true)
      .def(
          "run",
          [](Session& s, const py::dict& feeds, const std::vector<std::string>& fetches) {
            std::map<std::string, Tensor> in;
            for (auto item : feeds) {
              std::string name = py::str(item.first);
              in[name] = TensorFromArray(item.second.cast<py::array>(), "input '" + name + "'");
            }
            std::vector<Tensor> out;
            {
              py::gil_scoped_release release;
              ThrowIfError(s.Run(in, fetches, &out));
            }
            return ArraysOrNone(out);
          },
          py::arg("feeds"), py::arg("fetches"))
      .def("peak_bytes", &Session::peak_bytes,
           "the device's peak allocated bytes since the session was created (registers, "
           "their arena, the undo copy)");
}

// The CPU instruction set the kernels run and the devices that can be used.
void BindDevices(py::module_& m) {
  // An unknown OFL_CPU_ISA / ONEDNN_MAX_CPU_ISA fails the import, naming it.
  ThrowIfError(CheckKernelCpuIsaRequest());
  m.def(
      "cpu_isa", [] { return KernelCpuIsa().active; },
      "the instruction set the CPU kernels run: 'avx512', 'avx2' or 'scalar' (OFL_CPU_ISA "
      "forces a lower one)");
  m.def(
      "cpu_isa_info",
      [] {
        const KernelIsa info = KernelCpuIsa();
        py::dict d;
        d["active"] = info.active;
        d["detected"] = info.detected;
        d["requested"] = info.requested;
        d["onednn_requested"] = info.onednn_requested;
        d["onednn_cap"] = info.onednn_cap;
        d["note"] = info.note;
        return d;
      },
      "the CPU instruction set in use, what the CPU has, what the environment asked and why "
      "they differ");
  m.def(
      "check_device", [](const std::string& device) { ThrowIfError(CheckDeviceUsable(device)); },
      py::arg("device"));
  m.def("cuda_device_count", &VisibleCudaDevices);
}

// One-op tools (api/op_tools.h): the registry's ops, their schema, and one
// op or kernel run on arrays.
void BindOpTools(py::module_& m) {
  m.def("list_ops", &OpTypes);
  m.def("op_schema", &OpSchemaDict, py::arg("op_type"));
  m.def(
      "run_op",
      [](const std::string& op_type, const std::vector<py::object>& inputs, const py::dict& attrs) {
        return FreshArraysOrNone(Unwrap(
            RunOp(op_type, TensorViewsOfList(inputs, op_type), AttrsFromDict(attrs, op_type))));
      },
      py::arg("op_type"), py::arg("inputs"), py::arg("attrs") = py::dict());
  m.def(
      "op_grad",
      [](const std::string& op_type, const std::vector<py::object>& inputs, const py::dict& attrs,
         const std::vector<py::object>& output_grads) {
        return FreshArraysOrNone(Unwrap(RunOpGrad(op_type, TensorViewsOfList(inputs, op_type),
                                                  AttrsFromDict(attrs, op_type),
                                                  TensorViewsOfList(output_grads, op_type))));
      },
      py::arg("op_type"), py::arg("inputs"), py::arg("attrs"), py::arg("output_grads"));
  m.def(
      "op_info",
      [](const std::string& op_type,
         const std::vector<std::pair<std::vector<int64_t>, std::string>>& inputs,
         const py::dict& attrs) {
        OpInfo info =
            Unwrap(InspectOp(op_type, DescsFromList(inputs), AttrsFromDict(attrs, op_type)));
        py::dict d;
        py::list outs;
        for (const TensorDesc& o : info.outputs) {
          outs.append(py::make_tuple(o.shape.dims(), DataTypeName(o.dtype)));
        }
        d["outputs"] = outs;
        d["flops"] = info.cost.flops;
        d["memory_bytes"] = info.cost.memory_bytes;
        py::list sigs;
        for (const SbpSignature& s : info.signatures) sigs.append(s.ToString());
        d["sbp_signatures"] = sigs;
        return d;
      },
      py::arg("op_type"), py::arg("inputs"), py::arg("attrs") = py::dict());
}

// One op's kernel on one rank's local arrays, and its N-D SBP signatures.
void BindKernelTools(py::module_& m) {
  // One rank's kernel call on local arrays (api RunKernel): returns the
  // outputs, then the mutated inputs. output_descs: [(shape, dtype), ...];
  // input_places: [(logical shape, offset), ...], one per input, or None.
  m.def(
      "run_kernel",
      [](const std::string& op_type, const std::vector<py::object>& inputs, const py::dict& attrs,
         const std::vector<std::pair<std::vector<int64_t>, std::string>>& output_descs,
         const std::optional<std::vector<int64_t>>& logical_shape,
         const std::optional<std::vector<int64_t>>& logical_offset, int64_t iteration,
         const std::optional<std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>>&
             input_places) {
        std::vector<Tensor> in = TensorsFromList(inputs, op_type);
        std::vector<LogicalPlace> places;
        for (const auto& [shape, offset] : input_places.value_or(
                 std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{})) {
          places.push_back({Shape(shape), offset});
        }
        AttrMap attr_map = AttrsFromDict(attrs, op_type);
        std::vector<TensorDesc> outs = DescsFromList(output_descs);
        std::optional<Shape> logical;
        if (logical_shape) logical = Shape(*logical_shape);
        Maybe<std::vector<Tensor>> result = std::vector<Tensor>{};
        {
          py::gil_scoped_release release;
          result =
              RunKernel(op_type, in, attr_map, outs, logical, logical_offset, iteration, places);
        }
        return ArraysOrNone(Unwrap(std::move(result)));
      },
      py::arg("op_type"), py::arg("inputs"), py::arg("attrs"), py::arg("output_descs"),
      py::arg("logical_shape") = py::none(), py::arg("logical_offset") = py::none(),
      py::arg("iteration") = 0, py::arg("input_places") = py::none());
  // The op's N-D SBP signatures on a hierarchy of `hierarchy_ndim` axes, as
  // strings in NdSbpSignature's text form, one NdSbp per input then per
  // output: "(S(0), B), (B, S(1)) -> (S(0), S(1))". Order: the cartesian
  // product of the 1-D signatures, hierarchy axis 0 outermost (ops/nd_sbp.h).
  m.def(
      "op_nd_sbp_signatures",
      [](const std::string& op_type,
         const std::vector<std::pair<std::vector<int64_t>, std::string>>& input_descs,
         const py::dict& attrs, const py::object& hierarchy) {
        // An int: the axis count only; a list: the mesh's axis sizes (adds
        // the signatures that need divisibility, e.g. reshape's merges).
        std::vector<int64_t> dims;
        bool known = !py::isinstance<py::int_>(hierarchy);
        if (known) {
          dims = hierarchy.cast<std::vector<int64_t>>();
        } else {
          int64_t ndim = hierarchy.cast<int64_t>();
          if (ndim < 0)
            throw py::value_error("hierarchy_ndim must be >= 0, got " + std::to_string(ndim));
          dims.assign(ndim, 1);
        }
        std::vector<std::string> out;
        for (const NdSbpSignature& s :
             Unwrap(InspectNdSbp(op_type, DescsFromList(input_descs), AttrsFromDict(attrs, op_type),
                                 dims, known))) {
          out.push_back(s.ToString());
        }
        return out;
      },
      py::arg("op_type"), py::arg("input_descs"), py::arg("attrs"), py::arg("hierarchy"));
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "oneflow_lite C++ core: graphs, sessions and the op registry";
  BindProgram(m);
  BindDistributed(m);
  BindSession(m);
  BindEager(m);
  BindGlobal(m);
  BindPlanning(m);
  BindSearchers(m);
  BindSimulation(m);
  BindDevices(m);
  BindOpTools(m);
  BindKernelTools(m);
}

}  // namespace ofl::python
