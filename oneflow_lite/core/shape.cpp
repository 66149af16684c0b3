#include "oneflow_lite/core/shape.h"

#include <algorithm>

#include "oneflow_lite/core/checked_math.h"

namespace ofl {

int64_t Shape::NumElements() const { return Count(0, ndim()); }

int64_t Shape::Count(int64_t begin, int64_t end) const {
  if (std::find(dims_.begin() + begin, dims_.begin() + end, 0) != dims_.begin() + end) return 0;
  int64_t n = 1;
  for (int64_t i = begin; i < end; ++i) {
    std::optional<int64_t> next = MulInt64(n, dims_[i]);
    CHECK(next) << "element count of shape " << ToString()
                << " overflows int64: it was not validated (CheckShape)";
    n = *next;
  }
  return n;
}

Maybe<int64_t> Shape::CheckedNumElements(const std::string& what) const {
  for (size_t i = 0; i < dims_.size(); ++i) {
    OFL_ENSURE(dims_[i] >= 0, what, ": shape ", ToString(), " has the negative extent ", dims_[i],
               " at axis ", i);
  }
  if (std::find(dims_.begin(), dims_.end(), 0) != dims_.end()) return int64_t{0};
  int64_t n = 1;
  for (int64_t d : dims_) {
    std::optional<int64_t> next = MulInt64(n, d);
    OFL_ENSURE(next, what, ": shape ", ToString(), " has ", ProductText(dims_),
               " elements, more than int64 can hold");
    n = *next;
  }
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

Maybe<int64_t> CheckedNumBytes(const Shape& shape, DataType dtype, const std::string& what) {
  OFL_ASSIGN_OR_RETURN(const int64_t n, shape.CheckedNumElements(what));
  std::optional<int64_t> bytes = MulInt64(n, SizeOf(dtype));
  OFL_ENSURE(bytes, what, ": shape ", shape, " of ", DataTypeName(dtype), " takes ",
             ProductText({n, SizeOf(dtype)}), " bytes, more than int64 can hold");
  return *bytes;
}

Status CheckAllocation(const Shape& shape, DataType dtype, const std::string& what) {
  OFL_ASSIGN_OR_RETURN(const int64_t bytes, CheckedNumBytes(shape, dtype, what));
  OFL_ENSURE(bytes <= kMaxAllocationBytes, what, ": shape ", shape, " of ", DataTypeName(dtype),
             " takes ", bytes, " bytes, more than the largest allocation (", kMaxAllocationBytes,
             " bytes = 256 TiB)");
  return Status::OK();
}

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
