// NormalizePermutation: checks that `perm` permutes all `ndim` axes (entries
// may be negative, counting from the end) and returns it with non-negative
// entries. Shared by transpose's registration and its kernel. Pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/status.h"

namespace ofl {

inline Maybe<std::vector<int64_t>> NormalizePermutation(const std::vector<int64_t>& perm,
                                                        int64_t ndim, const std::string& where) {
  const std::string text = AttrToString(AttrValue(perm));
  OFL_ENSURE(static_cast<int64_t>(perm.size()) == ndim, where, ": perm=", text, " has ",
             perm.size(), " entries but x has ", ndim, " dims");
  std::vector<int64_t> out(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + ndim : perm[i];
    OFL_ENSURE(p >= 0 && p < ndim && !seen[p], where, ": perm=", text,
               " is not a permutation of the axes 0..", ndim - 1);
    seen[p] = true;
    out[i] = p;
  }
  return out;
}

}  // namespace ofl
