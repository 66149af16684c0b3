// Small helpers that write JSON text (the strategy report and diff in
// graph/, the runtime's Chrome trace): a quoted, escaped string and a number
// that round-trips (non-finite numbers become null).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace ofl {

std::string JsonString(const std::string& text);
std::string JsonNumber(double value);
inline std::string JsonNumber(int64_t value) { return std::to_string(value); }
inline std::string JsonNumber(int value) { return std::to_string(value); }

}  // namespace ofl
