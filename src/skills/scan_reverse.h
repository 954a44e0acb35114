// scan_reverse: flip(scan(flip(x))) along the scan's dim, the reverse cumulative sum or product
// (level1/91: torch.cumsum(x.flip(d), d).flip(d)), becomes one scan kernel that walks the dim from its
// end: it reads x and writes the result at mirrored indices, and neither flipped tensor is made (two
// copies of the whole tensor fewer). Exact: the same additions in the same order.
#pragma once

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::is_scan_reverse;

// Legal when: a generated kernel of one flip over exactly the scan's dim makes the scan's input and
// nothing else reads it; the scan is a generated scan kernel of one node; its result is read only by a
// kernel of one flip over the same dim; neither intermediate is a graph output. Site: kernels = {first
// flip, scan, second flip}.
std::vector<Site> scan_reverse_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> scan_reverse(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
