#include "oneflow_lite/core/attr.h"

#include <sstream>

namespace ofl {

namespace {
struct TypeNamer {
  const char* operator()(int64_t) const { return "int"; }
  const char* operator()(double) const { return "float"; }
  const char* operator()(bool) const { return "bool"; }
  const char* operator()(const std::string&) const { return "string"; }
  const char* operator()(const std::vector<int64_t>&) const { return "list[int]"; }
  const char* operator()(const std::vector<double>&) const { return "list[float]"; }
};

template <typename T>
std::string ListToString(const std::vector<T>& v) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << "]";
  return out.str();
}
}  // namespace

const char* AttrTypeName(const AttrValue& value) { return std::visit(TypeNamer(), value); }

std::string AttrToString(const AttrValue& value) {
  if (auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (auto* f = std::get_if<double>(&value)) return StrCat(*f);
  if (auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (auto* s = std::get_if<std::string>(&value)) return "'" + *s + "'";
  if (auto* l = std::get_if<std::vector<int64_t>>(&value)) return ListToString(*l);
  return ListToString(std::get<std::vector<double>>(value));
}

const AttrValue& AttrMap::Raw(const std::string& name) const {
  auto it = values_.find(name);
  CHECK(it != values_.end()) << "attr '" << name << "' is not set";
  return it->second;
}

std::string AttrMap::ToString() const {
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : values_) {
    s += (first ? "" : ", ") + k + "=" + AttrToString(v);
    first = false;
  }
  return s + "}";
}

proto::AttrValue AttrToProto(const AttrValue& value) {
  proto::AttrValue p;
  if (auto* i = std::get_if<int64_t>(&value)) {
    p.set_i(*i);
  } else if (auto* f = std::get_if<double>(&value)) {
    p.set_f(*f);
  } else if (auto* b = std::get_if<bool>(&value)) {
    p.set_b(*b);
  } else if (auto* s = std::get_if<std::string>(&value)) {
    p.set_s(*s);
  } else if (auto* l = std::get_if<std::vector<int64_t>>(&value)) {
    auto* ints = p.mutable_ints();  // sets the oneof case even for an empty list
    for (int64_t x : *l) ints->add_values(x);
  } else {
    auto* floats = p.mutable_floats();
    for (double x : std::get<std::vector<double>>(value)) floats->add_values(x);
  }
  return p;
}

AttrValue AttrFromProto(const proto::AttrValue& p) {
  switch (p.value_case()) {
    case proto::AttrValue::kI:
      return p.i();
    case proto::AttrValue::kF:
      return p.f();
    case proto::AttrValue::kB:
      return p.b();
    case proto::AttrValue::kS:
      return p.s();
    case proto::AttrValue::kInts:
      return std::vector<int64_t>(p.ints().values().begin(), p.ints().values().end());
    case proto::AttrValue::kFloats:
      return std::vector<double>(p.floats().values().begin(), p.floats().values().end());
    default:
      LOG(FATAL) << "AttrValue proto with no value";
  }
  return int64_t{0};
}

}  // namespace ofl
