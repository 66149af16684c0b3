// DeviceTensor (oneflow_lite._C.DeviceTensor): the Python handle of a tensor
// kept as an ofl::Tensor, in the memory of the device it is on (a CUDA
// device, or the host). The eager frontend holds CUDA tensors' values as
// DeviceTensors, numpy arrays for the rest. Eager calls take either kind per
// input: numpy arrays become host tensors (views, no copy), DeviceTensors go
// as they are; results come back as numpy arrays, or as DeviceTensors when
// an input was one or the result is not in host memory. Called with the GIL.
#pragma once

#include <string>
#include <vector>

#include "convert.h"

namespace ofl::python {

void BindDeviceTensor(py::module_& m);

// None -> undefined Tensor; numpy array -> a view; DeviceTensor -> itself.
// Sets *any_device when one was a DeviceTensor (leaves it otherwise).
std::vector<Tensor> EagerInputs(const std::vector<py::object>& objects, const std::string& what,
                                bool* any_device);
// Undefined -> None; a DeviceTensor when `as_device` or the tensor is not in
// host memory; else a numpy array owning the tensor's buffer (no copy).
py::list EagerResults(const std::vector<Tensor>& tensors, bool as_device);

}  // namespace ofl::python
