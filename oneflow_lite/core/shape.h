// Shape: the extent of each axis of a tensor. A scalar has zero axes.
// Value type; thread-safe for concurrent reads.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

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
  int64_t NumElements() const;
  // Product of the extents of axes [begin, end).
  int64_t Count(int64_t begin, int64_t end) const;
  const std::vector<int64_t>& dims() const { return dims_; }
  std::string ToString() const;  // "(2, 3)", "()" for a scalar

  bool operator==(const Shape& other) const { return dims_ == other.dims_; }
  bool operator!=(const Shape& other) const { return dims_ != other.dims_; }

 private:
  std::vector<int64_t> dims_;
};

std::ostream& operator<<(std::ostream& out, const Shape& shape);

// Maps a possibly negative axis into [0, ndim); an error names `what`.
Maybe<int64_t> NormalizeAxis(int64_t axis, int64_t ndim, const std::string& what);

// Numpy broadcasting of two shapes; the error names `what`.
Maybe<Shape> BroadcastShapes(const Shape& a, const Shape& b, const std::string& what);

}  // namespace ofl
