// Conversions between Python/numpy values and oneflow_lite's: ndarray <->
// Tensor (copies, or views that share the buffer), dict <-> AttrMap, and Status -> Python exception
// (the one place where a Status becomes an exception). Called with the GIL held.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/tensor.h"

namespace ofl::python {

namespace py = pybind11;

Tensor TensorFromArray(const py::array& array, const std::string& what);
py::array ArrayFromTensor(const Tensor& tensor);
// No copy: a Tensor over the array's own buffer when it is C-contiguous and
// aligned (it keeps the array alive; read it, do not write it), else a copy
// as TensorFromArray. For the eager path, whose kernels only read inputs.
Tensor TensorViewOfArray(const py::array& array, const std::string& what);
// No copy: an array over the tensor's buffer (a host tensor), which it keeps alive.
py::array ArrayOwningTensor(const Tensor& tensor);
AttrMap AttrsFromDict(const py::dict& attrs, const std::string& what);
// Throws ValueError / KeyError / NotImplementedError / RuntimeError.
void ThrowIfError(const Status& status);

template <typename T>
T Unwrap(Maybe<T> maybe) {
  ThrowIfError(maybe.status());
  return std::move(maybe).value();
}

}  // namespace ofl::python
