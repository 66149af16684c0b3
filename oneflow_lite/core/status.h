// Status and Maybe<T>: how bad user input travels up to the caller.
//
// A Status is OK or carries a code and a message a user can act on, e.g.
// "matmul: a.shape[-1]=64 != b.shape[-2]=32". Maybe<T> holds a value or a
// non-OK Status. Broken internal invariants are glog CHECKs, not Statuses.
// The Python binding is the one place where a Status becomes an exception.
// Value types; not synchronised (each object belongs to one thread at a time).
#pragma once

#include <glog/logging.h>

#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace ofl {

enum class StatusCode { kOk, kInvalidArgument, kNotFound, kUnimplemented, kInternal, kTimeout };

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status OK() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const { return ok() ? "OK" : message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Concatenates anything that has an operator<< into one string.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <typename... Args>
Status InvalidArgument(const Args&... args) {
  return Status(StatusCode::kInvalidArgument, StrCat(args...));
}
template <typename... Args>
Status NotFound(const Args&... args) {
  return Status(StatusCode::kNotFound, StrCat(args...));
}
template <typename... Args>
Status Unimplemented(const Args&... args) {
  return Status(StatusCode::kUnimplemented, StrCat(args...));
}

template <typename T>
class [[nodiscard]] Maybe {
 public:
  Maybe(T value) : data_(std::move(value)) {}        // NOLINT: implicit on purpose
  Maybe(Status status) : data_(std::move(status)) {  // NOLINT
    CHECK(!std::get<Status>(data_).ok()) << "Maybe<T> built from an OK status";
  }
  bool ok() const { return std::holds_alternative<T>(data_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(data_); }
  const T& value() const& {
    CHECK(ok()) << std::get<Status>(data_).message();
    return std::get<T>(data_);
  }
  T& value() & {
    CHECK(ok()) << std::get<Status>(data_).message();
    return std::get<T>(data_);
  }
  T&& value() && {
    CHECK(ok()) << std::get<Status>(data_).message();
    return std::get<T>(std::move(data_));
  }

 private:
  std::variant<T, Status> data_;
};

}  // namespace ofl

#define OFL_CONCAT_INNER(a, b) a##b
#define OFL_CONCAT(a, b) OFL_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define OFL_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::ofl::Status ofl_status_ = (expr);        \
    if (!ofl_status_.ok()) return ofl_status_; \
  } while (0)

// `lhs = value of expr`, or return its Status.
#define OFL_ASSIGN_OR_RETURN(lhs, expr) \
  OFL_ASSIGN_OR_RETURN_IMPL(OFL_CONCAT(ofl_maybe_, __LINE__), lhs, expr)
#define OFL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

// Returns InvalidArgument(message...) when `cond` is false.
#define OFL_ENSURE(cond, ...)                                \
  do {                                                       \
    if (!(cond)) return ::ofl::InvalidArgument(__VA_ARGS__); \
  } while (0)
