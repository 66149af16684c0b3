#include "oneflow_lite/core/tensor.h"

#include <cstdlib>
#include <cstring>

#include "oneflow_lite/core/checked_math.h"

namespace ofl {

namespace {
constexpr size_t kAlignment = 64;

std::shared_ptr<void> AllocateAligned(int64_t bytes) {
  size_t rounded = ((static_cast<size_t>(bytes) + kAlignment - 1) / kAlignment) * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  CHECK(p != nullptr) << "out of host memory allocating " << bytes << " bytes";
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

template <typename T>
void FillTyped(void* data, int64_t n, double value) {
  T* p = static_cast<T*>(data);
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(value);
}
}  // namespace

Tensor::Tensor(Shape shape, DataType dtype) : shape_(std::move(shape)), dtype_(dtype) {
  for (int64_t d : shape_.dims()) CHECK_GE(d, 0) << "negative extent in " << shape_;
  const std::optional<int64_t> bytes = MulInt64(numel(), SizeOf(dtype_));
  CHECK(bytes) << "bytes of shape " << shape_
               << " overflow int64: it was not validated (CheckShape)";
  owner_ = AllocateAligned(*bytes);
  data_ = owner_.get();
}

Tensor::Tensor(Shape shape, DataType dtype, std::shared_ptr<void> owner, void* data, Device device)
    : shape_(std::move(shape)),
      dtype_(dtype),
      owner_(std::move(owner)),
      data_(data),
      device_(device) {}

Tensor Tensor::Zeros(Shape shape, DataType dtype) {
  Tensor t(std::move(shape), dtype);
  std::memset(t.raw(), 0, t.nbytes());
  return t;
}

Tensor Tensor::Full(Shape shape, DataType dtype, double value) {
  Tensor t(std::move(shape), dtype);
  t.Fill(value);
  return t;
}

Tensor Tensor::Clone() const {
  CHECK(device_.is_host()) << "Clone of a tensor on " << device_
                           << ": only host tensors are cloned in place";
  Tensor t(shape_, dtype_);
  if (nbytes() > 0) std::memcpy(t.raw(), data_, nbytes());
  return t;
}

void Tensor::CopyFrom(const Tensor& other) {
  CHECK(shape_ == other.shape_ && dtype_ == other.dtype_)
      << "CopyFrom " << other.shape_ << " " << DataTypeName(other.dtype_) << " into " << shape_
      << " " << DataTypeName(dtype_);
  CHECK(device_.is_host() && other.device_.is_host())
      << "CopyFrom " << other.device_ << " into " << device_
      << ": a copy to or from a non-host device is a copy task on a stream, not CopyFrom";
  if (nbytes() > 0) std::memcpy(data_, other.data_, nbytes());
}

Status Tensor::CheckCopy(const Tensor& to, const Tensor& from, const std::string& what) {
  OFL_ENSURE(to.shape_ == from.shape_ && to.dtype_ == from.dtype_, what, ": has shape ", to.shape_,
             " ", DataTypeName(to.dtype_), ", got ", from.shape_, " ", DataTypeName(from.dtype_));
  OFL_ENSURE(to.device_.is_host() && from.device_.is_host(), what, ": is on ", to.device_,
             ", got a tensor on ", from.device_,
             " (copies between these devices are not supported: only CPU exists in this build)");
  return Status::OK();
}

void Tensor::Fill(double value) {
  CHECK(device_.is_host()) << "Fill of a tensor on " << device_ << ": host tensors only";
  switch (dtype_) {
    case DataType::kFloat32:
      FillTyped<float>(data_, numel(), value);
      break;
    case DataType::kFloat64:
      FillTyped<double>(data_, numel(), value);
      break;
    case DataType::kInt32:
      FillTyped<int32_t>(data_, numel(), value);
      break;
    case DataType::kInt64:
      FillTyped<int64_t>(data_, numel(), value);
      break;
    case DataType::kBool:
      FillTyped<bool>(data_, numel(), value);
      break;
    default:
      CHECK(value == 0.0) << "Fill of " << DataTypeName(dtype_) << " supports only zero";
      std::memset(data_, 0, nbytes());
  }
}

Tensor Tensor::Reshaped(Shape shape) const {
  CHECK_EQ(shape.NumElements(), numel()) << "Reshaped " << shape_ << " to " << shape;
  return Tensor(std::move(shape), dtype_, owner_, data_, device_);
}

}  // namespace ofl
