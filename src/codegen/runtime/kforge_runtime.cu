// Error recording for generated programs (one copy per program library).
#include <cstdarg>
#include <cstdio>

#include "kforge_runtime.cuh"

static thread_local char kf_error_message[2048];

extern "C" int kf_fail(int code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(kf_error_message, sizeof kf_error_message, fmt, args);
  va_end(args);
  return code;
}

extern "C" const char* kforge_last_error(void) { return kf_error_message; }
