// Small helpers shared by the C++ benchmarks: the machine's load average
// (every result records it before and after, since the machine is shared).
// Header-only; thread-safe.
#pragma once

#include <fstream>
#include <string>

namespace ofl::bench {

// The first three fields of /proc/loadavg: "0.78 1.00 1.71".
inline std::string LoadAverage() {
  std::ifstream file("/proc/loadavg");
  std::string a, b, c;
  file >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace ofl::bench
