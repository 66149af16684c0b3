// Sbp and NdSbp: how a logical tensor is laid out over the ranks of a
// placement (DESIGN.md section 3). S(axis) splits along an axis, B
// broadcasts, P holds a full-shape partial sum. An NdSbp has one Sbp per
// hierarchy axis. Text forms: "S(0)", "B", "P", "(S(0), B)". Value types.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "oneflow_lite/core/status.h"

namespace ofl {

class Sbp {
 public:
  enum class Kind { kSplit, kBroadcast, kPartialSum };

  static Sbp Split(int64_t axis) { return Sbp(Kind::kSplit, axis); }
  static Sbp Broadcast() { return Sbp(Kind::kBroadcast, -1); }
  static Sbp PartialSum() { return Sbp(Kind::kPartialSum, -1); }
  static Maybe<Sbp> Parse(const std::string& text);

  Kind kind() const { return kind_; }
  bool is_split() const { return kind_ == Kind::kSplit; }
  bool is_broadcast() const { return kind_ == Kind::kBroadcast; }
  bool is_partial_sum() const { return kind_ == Kind::kPartialSum; }
  int64_t axis() const { return axis_; }  // meaningful for S only
  std::string ToString() const;

  bool operator==(const Sbp& o) const { return kind_ == o.kind_ && axis_ == o.axis_; }
  bool operator!=(const Sbp& o) const { return !(*this == o); }
  bool operator<(const Sbp& o) const {
    return kind_ != o.kind_ ? kind_ < o.kind_ : axis_ < o.axis_;
  }

 private:
  Sbp(Kind kind, int64_t axis) : kind_(kind), axis_(axis) {}
  Kind kind_;
  int64_t axis_;
};

class NdSbp {
 public:
  NdSbp() = default;
  explicit NdSbp(std::vector<Sbp> axes) : axes_(std::move(axes)) {}
  // "(S(0), B)" or a single "S(0)" for a 1-D hierarchy.
  static Maybe<NdSbp> Parse(const std::string& text);

  int64_t size() const { return static_cast<int64_t>(axes_.size()); }
  const Sbp& operator[](int64_t i) const { return axes_[i]; }
  const std::vector<Sbp>& axes() const { return axes_; }
  std::string ToString() const;  // always parenthesised: "(S(0), B)"

  bool operator==(const NdSbp& o) const { return axes_ == o.axes_; }
  bool operator!=(const NdSbp& o) const { return axes_ != o.axes_; }
  bool operator<(const NdSbp& o) const { return axes_ < o.axes_; }

 private:
  std::vector<Sbp> axes_;
};

std::ostream& operator<<(std::ostream& out, const Sbp& sbp);
// `text` without leading and trailing white space (for the SBP parsers).
std::string TrimSpace(const std::string& text);
std::ostream& operator<<(std::ostream& out, const NdSbp& nd_sbp);

}  // namespace ofl
