#include "oneflow_lite/core/slicing.h"

namespace ofl {

Range BalancedPart(int64_t n, int64_t parts, int64_t index) {
  CHECK_GT(parts, 0);
  CHECK(index >= 0 && index < parts) << "part " << index << " of " << parts;
  int64_t base = n / parts;
  int64_t extra = n % parts;
  Range r;
  r.size = base + (index < extra ? 1 : 0);
  r.begin = index * base + std::min(index, extra);
  return r;
}

Status ValidateNdSbp(const Shape& logical, const Shape& hierarchy, const NdSbp& nd_sbp,
                     const std::string& what) {
  OFL_ENSURE(nd_sbp.size() == hierarchy.ndim(), what, ": NdSbp ", nd_sbp, " has ", nd_sbp.size(),
             " axes but the hierarchy ", hierarchy, " has ", hierarchy.ndim());
  for (const Sbp& s : nd_sbp.axes()) {
    if (s.is_split()) {
      OFL_ENSURE(s.axis() >= 0 && s.axis() < logical.ndim(), what, ": ", s,
                 " splits an axis the shape ", logical, " does not have");
    }
  }
  return Status::OK();
}

TensorSlice SliceOf(const Shape& logical, const Shape& hierarchy, const NdSbp& nd_sbp,
                    const std::vector<int64_t>& coords) {
  CHECK(ValidateNdSbp(logical, hierarchy, nd_sbp, "SliceOf").ok());
  CHECK_EQ(static_cast<int64_t>(coords.size()), hierarchy.ndim());
  TensorSlice slice;
  slice.shape = logical;
  slice.offset.assign(logical.ndim(), 0);
  for (int64_t a = 0; a < hierarchy.ndim(); ++a) {
    const Sbp& s = nd_sbp[a];
    if (s.is_partial_sum()) slice.partial = true;
    if (!s.is_split()) continue;
    Range r = BalancedPart(slice.shape[s.axis()], hierarchy[a], coords[a]);
    slice.offset[s.axis()] += r.begin;
    slice.shape[s.axis()] = r.size;
  }
  return slice;
}

}  // namespace ofl
