// Shape: the extent of each axis of a tensor. A scalar has zero axes.
// A Shape from user input (Python shapes, op attributes, graph inputs and
// variables, protos) is validated with CheckedNumBytes/CheckShape before use:
// every extent >= 0 and elements x item size within int64. NumElements and
// Count then cannot overflow; they CHECK that they do not (a broken
// invariant, not an input error). Value type; thread-safe for concurrent reads.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "oneflow_lite/core/data_type.h"
#include "oneflow_lite/core/status.h"

namespace ofl {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int64_t ndim() const { return static_cast<int64_t>(dims_.size()); }
  int64_t at(int64_t axis) const { return dims_.at(axis); }
  int64_t operator[](int64_t axis) const { return dims_[axis]; }
  int64_t& operator[](int64_t axis) { return dims_[axis]; }
  int64_t NumElements() const;  // CHECKs that the product fits in int64
  // Product of the extents of axes [begin, end) (CHECKed like NumElements).
  int64_t Count(int64_t begin, int64_t end) const;
  // The element count, or an error naming `what` and the shape when an
  // extent is negative or the count is more than int64 can hold.
  Maybe<int64_t> CheckedNumElements(const std::string& what) const;
  const std::vector<int64_t>& dims() const { return dims_; }
  std::string ToString() const;  // "(2, 3)", "()" for a scalar

  bool operator==(const Shape& other) const { return dims_ == other.dims_; }
  bool operator!=(const Shape& other) const { return dims_ != other.dims_; }

 private:
  std::vector<int64_t> dims_;
};

std::ostream& operator<<(std::ostream& out, const Shape& shape);

// The bytes of a tensor of `shape` and `dtype`, or an error naming `what`
// and the shape: a negative extent, or elements or bytes more than int64
// can hold, e.g. "reshape 'r': shape (4, 4611686018427387905) has
// 18446744073709551620 elements, more than int64 can hold".
Maybe<int64_t> CheckedNumBytes(const Shape& shape, DataType dtype, const std::string& what);
inline Status CheckShape(const Shape& shape, DataType dtype, const std::string& what) {
  return CheckedNumBytes(shape, dtype, what).status();
}

// The largest single buffer the host allocator is asked for (256 TiB): a
// shape that fits int64 but not this is refused before allocating, with an
// error naming `what`, instead of failing inside the allocator.
inline constexpr int64_t kMaxAllocationBytes = int64_t{1} << 48;
Status CheckAllocation(const Shape& shape, DataType dtype, const std::string& what);

// Maps a possibly negative axis into [0, ndim); an error names `what`.
Maybe<int64_t> NormalizeAxis(int64_t axis, int64_t ndim, const std::string& what);

// Numpy broadcasting of two shapes; the error names `what`.
Maybe<Shape> BroadcastShapes(const Shape& a, const Shape& b, const std::string& what);

}  // namespace ofl
