// AttrValue and AttrMap: an op's attributes (ints, floats, bools, strings,
// lists), as the op registry, the Job and the Plan use them, with the
// conversion to and from their proto. Value types; thread-safe to read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "oneflow_lite/core/proto/tensor.pb.h"
#include "oneflow_lite/core/status.h"

namespace ofl {

using AttrValue =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;

const char* AttrTypeName(const AttrValue& value);
std::string AttrToString(const AttrValue& value);

class AttrMap {
 public:
  AttrMap() = default;
  AttrMap(std::initializer_list<std::pair<const std::string, AttrValue>> init) : values_(init) {}

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  void Set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  const AttrValue& Raw(const std::string& name) const;
  // The attribute's value; CHECKs presence and type (the registry validated both).
  template <typename T>
  const T& Get(const std::string& name) const {
    const AttrValue& v = Raw(name);
    CHECK(std::holds_alternative<T>(v)) << "attr '" << name << "' holds " << AttrTypeName(v);
    return std::get<T>(v);
  }
  const std::map<std::string, AttrValue>& values() const { return values_; }
  std::string ToString() const;  // "{axis=1, keepdims=false}"

 private:
  std::map<std::string, AttrValue> values_;
};

proto::AttrValue AttrToProto(const AttrValue& value);
AttrValue AttrFromProto(const proto::AttrValue& value);

}  // namespace ofl
