// SearcherOptions: each searcher's own options, held by type inside
// PlanOptions (graph/auto_parallel.h). A searcher declares its options struct
// beside itself (graph/searchers/*.h); a caller sets one with Mutable<T>(),
// a searcher reads it with Get<T>(), which gives T's defaults when unset, so
// PlanOptions names no searcher's options. A value type: copies copy every
// option held; not synchronised.
#pragma once

#include <any>
#include <map>
#include <typeindex>

namespace ofl {

class SearcherOptions {
 public:
  // The options of type T that were set, else T's defaults.
  template <typename T>
  const T& Get() const {
    auto it = options_.find(std::type_index(typeid(T)));
    if (it == options_.end()) {
      static const T kDefaults{};
      return kDefaults;
    }
    return *std::any_cast<T>(&it->second);
  }

  // The options of type T, set to T's defaults first when unset.
  template <typename T>
  T& Mutable() {
    auto it = options_.try_emplace(std::type_index(typeid(T)), T{}).first;
    return *std::any_cast<T>(&it->second);
  }

 private:
  std::map<std::type_index, std::any> options_;
};

}  // namespace ofl
