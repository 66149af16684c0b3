// Tensor: a buffer with a shape, a dtype and the device it lives on; the
// unit kernels read and write. Copies share the buffer (like numpy views of
// one array); Clone() copies the bytes. The buffer is 64-byte aligned and
// freed with the last owner. Tensors made here are host memory on cpu:0; an
// Allocator (oneflow_lite/core/allocator.h) makes them on its device. Clone,
// CopyFrom and Fill touch the bytes from the host, so they take host (CPU)
// tensors only: a copy to or from another device is a copy task on a stream.
// A Tensor is not synchronised: concurrent writers need outside order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "oneflow_lite/core/data_type.h"
#include "oneflow_lite/core/device.h"
#include "oneflow_lite/core/shape.h"

namespace ofl {

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialised buffer.
  Tensor(Shape shape, DataType dtype);
  // Wraps memory of `device` owned elsewhere; `owner` keeps it alive.
  Tensor(Shape shape, DataType dtype, std::shared_ptr<void> owner, void* data, Device device = {});

  static Tensor Zeros(Shape shape, DataType dtype);
  static Tensor Full(Shape shape, DataType dtype, double value);

  const Shape& shape() const { return shape_; }
  DataType dtype() const { return dtype_; }
  const Device& device() const { return device_; }
  int64_t numel() const { return shape_.NumElements(); }
  int64_t nbytes() const { return numel() * SizeOf(dtype_); }
  bool defined() const { return data_ != nullptr || numel() == 0; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    CHECK(DataTypeOf<T>::value == dtype_) << "Tensor holds " << DataTypeName(dtype_);
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    CHECK(DataTypeOf<T>::value == dtype_) << "Tensor holds " << DataTypeName(dtype_);
    return static_cast<const T*>(data_);
  }

  Tensor Clone() const;
  // Same shape and dtype, both on host devices (CHECKed: callers check
  // user values first and return a Status, see CheckCopy).
  void CopyFrom(const Tensor& other);
  // Why `from` cannot be copied into `to` by CopyFrom (shape, dtype or a
  // non-host device), naming `what`; OK when it can.
  static Status CheckCopy(const Tensor& to, const Tensor& from, const std::string& what);
  void Fill(double value);
  // Same buffer, another shape with the same element count (CHECKed).
  Tensor Reshaped(Shape shape) const;

 private:
  Shape shape_;
  DataType dtype_ = DataType::kFloat32;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  Device device_;
};

}  // namespace ofl
