// Status names and the check-failure reporter.
#include "base/status.h"

#include <cstdio>
#include <cstdlib>

namespace kforge {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kExternal: return "external";
  }
  return "unknown";
}

namespace detail {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << "kforge: internal check failed at " << file << ":" << line << ": " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n(this is a bug in kforge; please report it with the command you ran)\n",
               stream_.str().c_str());
  std::abort();
}

}  // namespace detail
}  // namespace kforge
