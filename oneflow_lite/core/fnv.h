// FNV-1a, 64 bits: a hash of bytes that is the same on every process, host
// and build (std::hash need not be), for values that ranks compare or derive
// alike: plan digests, communicator slots, a group's connection check. Not
// for security. A pure function; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace ofl {

inline uint64_t Fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace ofl
