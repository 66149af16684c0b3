#include "oneflow_lite/core/shape.h"

#include <algorithm>

namespace ofl {

int64_t Shape::NumElements() const { return Count(0, ndim()); }

int64_t Shape::Count(int64_t begin, int64_t end) const {
  int64_t n = 1;
  for (int64_t i = begin; i < end; ++i) n *= dims_[i];
  return n;
}

std::string Shape::ToString() const {
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& out, const Shape& shape) { return out << shape.ToString(); }

Maybe<int64_t> NormalizeAxis(int64_t axis, int64_t ndim, const std::string& what) {
  if (axis < -ndim || axis >= ndim || ndim == 0) {
    return InvalidArgument(what, ": axis ", axis, " is out of range for a tensor with ", ndim,
                           " dims");
  }
  return axis < 0 ? axis + ndim : axis;
}

Maybe<Shape> BroadcastShapes(const Shape& a, const Shape& b, const std::string& what) {
  int64_t n = std::max(a.ndim(), b.ndim());
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.ndim() ? 1 : a[i - (n - a.ndim())];
    int64_t db = i < n - b.ndim() ? 1 : b[i - (n - b.ndim())];
    if (da != db && da != 1 && db != 1) {
      return InvalidArgument(what, ": shapes ", a, " and ", b, " cannot be broadcast (axis ", i,
                             ": ", da, " vs ", db, ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return Shape(out);
}

}  // namespace ofl
