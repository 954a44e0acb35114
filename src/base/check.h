// Always-on invariant checks: a failed KF_CHECK is our bug; it prints context and aborts.
#pragma once

#include <sstream>

namespace kforge::detail {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

}  // namespace kforge::detail

#define KF_CHECK(cond) \
  if (cond) {          \
  } else               \
    ::kforge::detail::CheckFailure(__FILE__, __LINE__, #cond)
