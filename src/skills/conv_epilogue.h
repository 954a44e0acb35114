// conv_epilogue: the elementwise chain after a convolution (or transposed convolution) joins the
// convolution's kernel. The library call writes into the chain's output and one generated pass adds
// the conv's bias and computes the chain in place, where before the bias was its own pass over the
// output and the chain another: one full read and write of the output fewer (torch.compile's
// Inductor does the same: cuDNN without bias, then one fused pointwise kernel).
#pragma once

#include "kernels/forms.h"
#include "skills/skill.h"

namespace kforge::skills {

using kernels::is_conv_epilogue;
using kernels::is_conv_library_kernel;
using kernels::is_conv_node;

// Legal when: the producer is a cuDNN conv or conv_transpose kernel of the convolution alone; the
// consumer is a generated elementwise chain whose result has the convolution's shape and dtype;
// and the convolution's result is read by the consumer alone (not by another kernel, not a graph
// output). Site: kernels = {conv kernel, chain kernel}.
std::vector<Site> conv_epilogue_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> conv_epilogue(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
