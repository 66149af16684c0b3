#include "convert.h"

#include <pybind11/stl.h>

#include <cstring>

namespace ofl::python {

namespace {
Maybe<DataType> DataTypeOfArray(const py::array& a, const std::string& what) {
  py::dtype dt = a.dtype();
  if (dt.is(py::dtype::of<float>())) return DataType::kFloat32;
  if (dt.is(py::dtype::of<double>())) return DataType::kFloat64;
  if (dt.is(py::dtype::of<int32_t>())) return DataType::kInt32;
  if (dt.is(py::dtype::of<int64_t>())) return DataType::kInt64;
  if (dt.is(py::dtype::of<bool>())) return DataType::kBool;
  return InvalidArgument(what, ": numpy dtype ", std::string(py::str(dt)),
                         " is not supported (float32, float64, int32, int64, bool)");
}

py::dtype NumpyDtype(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return py::dtype::of<float>();
    case DataType::kFloat64:
      return py::dtype::of<double>();
    case DataType::kInt32:
      return py::dtype::of<int32_t>();
    case DataType::kInt64:
      return py::dtype::of<int64_t>();
    case DataType::kBFloat16:
    case DataType::kFloat16:
      return py::dtype("uint16");  // raw storage bits
    case DataType::kBool:
      return py::dtype::of<bool>();
  }
  return py::dtype::of<float>();
}
}  // namespace

void ThrowIfError(const Status& status) {
  if (status.ok()) return;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      throw py::value_error(status.message());
    case StatusCode::kNotFound:
      throw py::value_error(status.message());
    case StatusCode::kUnimplemented: {
      py::gil_scoped_acquire gil;  // callers may have released it around a run
      PyErr_SetString(PyExc_NotImplementedError, status.message().c_str());
      throw py::error_already_set();
    }
    default:
      throw std::runtime_error(status.message());
  }
}

Tensor TensorFromArray(const py::array& input, const std::string& what) {
  DataType dtype = Unwrap(DataTypeOfArray(input, what));
  py::array a = py::array::ensure(input, py::array::c_style);
  std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
  Tensor t(Shape(dims), dtype);
  if (t.nbytes() > 0) std::memcpy(t.raw(), a.data(), t.nbytes());
  return t;
}

py::array ArrayFromTensor(const Tensor& t) {
  std::vector<py::ssize_t> dims(t.shape().dims().begin(), t.shape().dims().end());
  py::array a(NumpyDtype(t.dtype()), dims);
  if (t.nbytes() > 0) std::memcpy(a.mutable_data(), t.raw(), t.nbytes());
  return a;
}

Tensor TensorViewOfArray(const py::array& input, const std::string& what) {
  const DataType dtype = Unwrap(DataTypeOfArray(input, what));
  constexpr int kFlags = py::array::c_style | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  if ((input.flags() & kFlags) != kFlags) return TensorFromArray(input, what);
  std::vector<int64_t> dims(input.shape(), input.shape() + input.ndim());
  // The owner drops its reference under the GIL, wherever the last copy dies.
  std::shared_ptr<void> owner(new py::object(input), [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
  });
  return Tensor(Shape(dims), dtype, std::move(owner), const_cast<void*>(input.data()));
}

py::array ArrayOwningTensor(const Tensor& t) {
  CHECK(t.device().is_host()) << "ArrayOwningTensor: tensor on " << t.device();
  std::vector<py::ssize_t> dims(t.shape().dims().begin(), t.shape().dims().end());
  auto* keep = new Tensor(t);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(NumpyDtype(t.dtype()), dims, {}, keep->raw(), base);
}

AttrMap AttrsFromDict(const py::dict& attrs, const std::string& what) {
  AttrMap out;
  for (auto item : attrs) {
    std::string key = py::str(item.first);
    py::handle v = item.second;
    if (py::isinstance<py::bool_>(v)) {
      out.Set(key, v.cast<bool>());
    } else if (py::isinstance<py::int_>(v)) {
      out.Set(key, v.cast<int64_t>());
    } else if (py::isinstance<py::float_>(v)) {
      out.Set(key, v.cast<double>());
    } else if (py::isinstance<py::str>(v)) {
      out.Set(key, v.cast<std::string>());
    } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
      py::sequence seq = v.cast<py::sequence>();
      bool all_int = true;
      for (auto e : seq) {
        if (!py::isinstance<py::int_>(e) || py::isinstance<py::bool_>(e)) all_int = false;
      }
      if (all_int) {
        out.Set(key, v.cast<std::vector<int64_t>>());
      } else {
        out.Set(key, v.cast<std::vector<double>>());
      }
    } else {
      throw py::type_error(what + ": attribute '" + key + "' has unsupported type " +
                           std::string(py::str(py::type::handle_of(v))));
    }
  }
  return out;
}

}  // namespace ofl::python
