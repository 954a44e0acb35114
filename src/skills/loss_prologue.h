// loss_prologue: a pointwise chain whose only reader is the prediction operand of an elementwise loss
// (mse, l1, smooth_l1, huber, kl_div) joins the loss's kernel: each prediction is computed where the
// loss reads it, and the chain's result is never stored. kl_div(log(p), q) is the case KernelBench has.
#pragma once

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::is_elementwise_loss_kernel;
using kernels::is_loss_prologue;

// Legal when: the producer is a generated pointwise chain; the consumer is a generated loss kernel of
// one elementwise loss (not cross_entropy or triplet_margin_loss) that reads the chain's result as its
// prediction (input 0); nothing else reads that result and it is not a graph output.
// Site: kernels = {chain, loss}.
std::vector<Site> loss_prologue_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> loss_prologue(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
