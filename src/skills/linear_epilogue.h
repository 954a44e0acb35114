// linear_epilogue: the elementwise chain after a cuBLAS linear (x W^T + bias) joins its kernel. The
// GEMM writes x W^T into the chain's output (beta = 0) and one generated pass adds the bias and
// computes the chain in place, where before the bias was first broadcast over the whole output (a
// write) for the GEMM to accumulate onto (a read), and the chain was its own pass.
#pragma once

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::is_linear_epilogue;
using kernels::is_linear_kernel;

// Legal when: the producer is a cuBLAS kernel of one linear node; the consumer is a generated
// pointwise chain whose result has the linear's shape and dtype; nothing else reads the linear's
// result and it is not a graph output. Site: kernels = {linear kernel, chain kernel}.
std::vector<Site> linear_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> linear_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
