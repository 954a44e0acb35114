// scan_exclusive: cat([identity of size 1 along d, scan(slice(x, d, 0, L - 1), d)], d), the exclusive
// cumulative sum (or product) as PyTorch code writes it (level1/92: torch.cat((zeros, cumsum(x.narrow(d,
// 0, L - 1), d)), d)), becomes one scan kernel: it reads x's first L - 1 positions in place, writes
// the running result shifted by one and the identity at position 0; the slice, the scan's own output
// and the concatenation are never made. Exact: the same additions in the same order.
#pragma once

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::is_scan_exclusive;

// Legal when: a generated scan kernel of one cumsum (cumprod) along d reads a slice of x along d from
// 0 to x's size - 1 with step 1, made by a kernel of its own and read by nothing else; its result is
// read only by a cat along d of exactly two tensors, the first a full of 0 (1 for cumprod) of size 1
// along d (read by nothing else), the second the scan's result; slice, full and cat each in a kernel
// of their own; no intermediate is a graph output. Site: kernels = {slice, full, scan, cat} in
// schedule order.
std::vector<Site> scan_exclusive_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> scan_exclusive(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
