// fuse_elementwise: a producer kernel of elementwise ops joins its consumer's elementwise chain, so
// the value between them stays in registers instead of a round trip through device memory.
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

// Legal when: both kernels are generated elementwise chains; the producer's result has the
// consumer's output shape (every node of the joined chain runs at the consumer's index); and the
// producer's result is read by the consumer alone (not by another kernel, not a graph output).
// Site: kernels = {producer, consumer}.
std::vector<Site> fuse_elementwise_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> fuse_elementwise(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
