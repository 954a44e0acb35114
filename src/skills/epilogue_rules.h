// What the epilogue skills (conv_epilogue, linear_epilogue) share: when the elementwise chain after
// a library kernel may become that kernel's epilogue, the sites, and the merge.
#pragma once

#include <string>

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::tail_is_pointwise;

// Why the chain kernel `consumer` cannot become the epilogue of the library kernel `producer` (""
// when it can): `producer_ok` says whether the producer is of the skill's kind (`producer_kind`
// describes it for the message); the consumer must be a generated pointwise chain whose result has
// the producer's shape and dtype (the library writes into it); the producer's result is read by the
// chain alone and is not a graph output.
std::string epilogue_illegal(const ir::Graph& g, const schedule::Schedule& s, int producer, int consumer,
                             bool (*producer_ok)(const ir::Graph&, const schedule::Kernel&), const char* producer_kind);

// Every {producer, consumer} pair `illegal` accepts, in a stable order.
std::vector<Site> epilogue_sites(const ir::Graph& g, const schedule::Schedule& s,
                                 std::string (*illegal)(const ir::Graph&, const schedule::Schedule&, int, int));

// The producer kernel (its library call, strategy and knobs) with the chain's nodes after its own,
// at the chain's place; the chain's block size kept. Legality is the caller's.
schedule::Schedule merge_epilogue(const schedule::Schedule& s, const Site& site, const std::string& skill);

}  // namespace kforge::skills
