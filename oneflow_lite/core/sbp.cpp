#include "oneflow_lite/core/sbp.h"

#include <cctype>

namespace ofl {

Maybe<Sbp> Sbp::Parse(const std::string& raw) {
  std::string text = TrimSpace(raw);
  if (text == "B") return Broadcast();
  if (text == "P") return PartialSum();
  if (text.size() >= 4 && text[0] == 'S' && text[1] == '(' && text.back() == ')') {
    std::string digits = TrimSpace(text.substr(2, text.size() - 3));
    bool all_digits = !digits.empty();
    for (char c : digits) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
    if (all_digits && digits.size() < 10) return Split(std::stoll(digits));
  }
  return InvalidArgument("unknown SBP '", raw, "' (expected S(axis), B or P)");
}

std::string Sbp::ToString() const {
  switch (kind_) {
    case Kind::kSplit:
      return "S(" + std::to_string(axis_) + ")";
    case Kind::kBroadcast:
      return "B";
    case Kind::kPartialSum:
      return "P";
  }
  return "?";
}

Maybe<NdSbp> NdSbp::Parse(const std::string& raw) {
  std::string text = TrimSpace(raw);
  if (text.empty()) return InvalidArgument("empty NdSbp");
  if (text.front() != '(' || text.back() != ')') {
    OFL_ASSIGN_OR_RETURN(Sbp one, Sbp::Parse(text));
    return NdSbp({one});
  }
  std::string body = text.substr(1, text.size() - 2);
  std::vector<Sbp> axes;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i == body.size() || (body[i] == ',' && depth == 0)) {
      auto item = Sbp::Parse(body.substr(start, i - start));
      if (!item.ok()) return InvalidArgument("in NdSbp '", raw, "': ", item.status().message());
      axes.push_back(item.value());
      start = i + 1;
    } else if (body[i] == '(') {
      ++depth;
    } else if (body[i] == ')') {
      --depth;
    }
  }
  return NdSbp(axes);
}

std::string NdSbp::ToString() const {
  std::string s = "(";
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (i > 0) s += ", ";
    s += axes_[i].ToString();
  }
  return s + ")";
}

std::string TrimSpace(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::ostream& operator<<(std::ostream& out, const Sbp& sbp) { return out << sbp.ToString(); }
std::ostream& operator<<(std::ostream& out, const NdSbp& nd) { return out << nd.ToString(); }

}  // namespace ofl
