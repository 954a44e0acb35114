// Device helpers of the special functions (elementwise_ops.def's kf_digamma, kf_polygamma, kf_zeta, kf_i0e, kf_i1e):
// added to a kernel's source where its code calls them, so the runtime header (part of every build-cache key)
// stays as it is.
#pragma once

#include <string>

namespace kforge::codegen {

// `code` with the definitions of the helpers it calls inserted after its runtime include (each guarded, so that
// kernels compiled in one unit define them once); `code` unchanged when it calls none.
std::string with_special_math(const std::string& code);

}  // namespace kforge::codegen
