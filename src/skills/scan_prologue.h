// scan_prologue: a pointwise chain whose only reader is a scan (cumsum, cumprod) joins the scan's
// kernel: each element is computed where the scan would load it (rows: striped, coalesced evaluations
// exchanged into each thread's block of items), and the chain's result is never stored. x * mask
// before a cumsum (level1/93), a cast or a scale before a running sum.
#pragma once

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::is_scan_kernel;
using kernels::is_scan_prologue;

// Legal when: the producer is a generated pointwise chain; the consumer a generated scan kernel of
// one scan that reads the chain's result; nothing else reads that result and it is not a graph
// output. Site: kernels = {chain, scan}.
std::vector<Site> scan_prologue_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> scan_prologue(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
