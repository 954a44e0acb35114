// scan_prologue: a pointwise chain whose only reader is a scan (cumsum, cumprod) joins the scan's
// kernel: each element is computed where the scan would load it (rows: striped, coalesced evaluations
// exchanged into each thread's block of items), and the chain's result is never stored. x * mask
// before a cumsum (level1/93), a cast or a scale before a running sum.
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

// True for a kernel this skill made: a generated scan kernel whose last node is the scan and whose
// other nodes are its pointwise prologue.
bool is_scan_prologue(const ir::Graph& g, const schedule::Kernel& k);

// Legal when: the producer is a generated pointwise chain; the consumer a generated scan kernel of
// one scan that reads the chain's result; nothing else reads that result and it is not a graph
// output. Site: kernels = {chain, scan}.
std::vector<Site> scan_prologue_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> scan_prologue(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
