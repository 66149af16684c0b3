// DeviceTensor and the eager calls' argument conversions (device_tensor.h).
#include "device_tensor.h"

#include <pybind11/stl.h>

#include "oneflow_lite/api/eager.h"

namespace ofl::python {

std::vector<Tensor> EagerInputs(const std::vector<py::object>& objects, const std::string& what,
                                bool* any_device) {
  std::vector<Tensor> out;
  out.reserve(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    const py::object& o = objects[i];
    if (o.is_none()) {
      out.emplace_back();
    } else if (py::isinstance<Tensor>(o)) {
      out.push_back(o.cast<Tensor>());
      *any_device = true;
    } else {
      out.push_back(
          TensorViewOfArray(o.cast<py::array>(), what + " argument " + std::to_string(i)));
    }
  }
  return out;
}

py::list EagerResults(const std::vector<Tensor>& tensors, bool as_device) {
  py::list out;
  for (const Tensor& t : tensors) {
    if (!t.defined()) {
      out.append(py::none());
    } else if (as_device || !t.device().is_host()) {
      out.append(py::cast(t));
    } else {
      out.append(ArrayOwningTensor(t));
    }
  }
  return out;
}

void BindDeviceTensor(py::module_& m) {
  py::class_<Tensor>(m, "DeviceTensor",
                     "a tensor in its device's memory (eager CUDA tensors' values); "
                     "numpy() copies it to the host")
      .def_property_readonly("shape",
                             [](const Tensor& t) { return py::tuple(py::cast(t.shape().dims())); })
      .def_property_readonly("dtype", [](const Tensor& t) { return DataTypeName(t.dtype()); })
      .def_property_readonly("device", [](const Tensor& t) { return t.device().ToString(); })
      .def_property_readonly("nbytes", &Tensor::nbytes)
      .def(
          "numpy", [](const Tensor& t) { return ArrayOwningTensor(HostCopy(t)); },
          "a numpy array holding a copy of the values");
}

}  // namespace ofl::python
