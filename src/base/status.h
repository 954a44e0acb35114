// Recoverable errors as values: Status and StatusOr<T> (user errors, failed builds, bad input).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "base/check.h"

namespace kforge {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // the user gave us something malformed
  kNotFound,         // a file or name that does not exist
  kUnsupported,      // well-formed, but kforge cannot handle it (yet)
  kInternal,         // our bug: an invariant that should have held
  kExternal,         // a tool we ran failed (python, nvcc)
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prepends context: "while reading graph.json: <message>".
  Status with_context(const std::string& context) const {
    if (is_ok()) return *this;
    return {code_, context + ": " + message_};
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return {ErrorCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) {
  return {ErrorCode::kNotFound, std::move(m)};
}
inline Status unsupported(std::string m) {
  return {ErrorCode::kUnsupported, std::move(m)};
}
inline Status internal_error(std::string m) {
  return {ErrorCode::kInternal, std::move(m)};
}
inline Status external_error(std::string m) {
  return {ErrorCode::kExternal, std::move(m)};
}

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    KF_CHECK(!status_.is_ok()) << "StatusOr built from an ok Status without a value";
  }

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    KF_CHECK(is_ok()) << "value() of a failed StatusOr: " << status_.message();
    return *value_;
  }
  const T& value() const& {
    KF_CHECK(is_ok()) << "value() of a failed StatusOr: " << status_.message();
    return *value_;
  }
  T&& value() && {
    KF_CHECK(is_ok()) << "value() of a failed StatusOr: " << status_.message();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace kforge

#define KF_CONCAT_INNER(a, b) a##b
#define KF_CONCAT(a, b) KF_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` failed.
#define KF_RETURN_IF_ERROR(expr)                \
  do {                                          \
    ::kforge::Status kf_status_ = (expr);       \
    if (!kf_status_.is_ok()) return kf_status_; \
  } while (false)

// `KF_ASSIGN_OR_RETURN(auto x, f());` binds x to the value or returns the error.
#define KF_ASSIGN_OR_RETURN(lhs, expr) KF_ASSIGN_OR_RETURN_IMPL(KF_CONCAT(kf_or_, __LINE__), lhs, expr)
#define KF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.is_ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
