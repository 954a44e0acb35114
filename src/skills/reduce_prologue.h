// reduce_prologue: a pointwise chain whose only reader is a reduction (sum, mean, amax, amin, prod,
// logsumexp, norm, var) joins the reduction's kernel: each element is computed where the reduction
// would load it, and the chain's result is never stored. x ** 2 before a mean (RMSNorm), abs before
// a sum (L1), the clamp of a hinge loss before its mean.
#pragma once

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::is_reduce_kernel;
using kernels::is_reduce_prologue;

// Legal when: the producer is a generated pointwise chain; the consumer is a generated reduce kernel
// of one reduction (family reduce, not argmax/argmin) that reads the chain's result as its input;
// nothing else reads that result and it is not a graph output. Site: kernels = {chain, reduce}.
std::vector<Site> reduce_prologue_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> reduce_prologue(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
