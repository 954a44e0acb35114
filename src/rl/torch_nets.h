// Internal to src/rl (it includes torch): the actor and critic modules, the packing of decision points
// into padded tensors, and the PPO objective. Only src/rl .cpp files and tests/rl include it.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>

#include <memory>
#include <vector>

#include "rl/networks.h"
#include "rl/trajectory.h"

namespace kforge::rl {

// in -> hidden -> hidden -> out, tanh between layers (small inputs, stable on CPU).
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t in, int64_t hidden, int64_t out);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
};
TORCH_MODULE(Mlp);

struct ActorCritic::Impl {
  NetworkDims dims;
  Mlp actor{nullptr};   // concat(state, action) -> score
  Mlp critic{nullptr};  // state -> value
  std::unique_ptr<torch::optim::Adam> actor_optimizer;
  std::unique_ptr<torch::optim::Adam> critic_optimizer;
};

// Decision points packed for one forward pass: states (B, S); state-action pairs padded to the most
// actions of the batch (B, A, S + F); mask (B, A), true where an action exists; chosen (B) int64.
struct PackedDecisions {
  torch::Tensor states;
  torch::Tensor pairs;
  torch::Tensor mask;
  torch::Tensor chosen;
};
PackedDecisions pack_decisions(const std::vector<const Decision*>& decisions, const NetworkDims& dims);

// Log-softmax of `scores` (B, A) over the entries where `mask` is true; masked entries come out 0.
torch::Tensor masked_log_softmax(const torch::Tensor& scores, const torch::Tensor& mask);
// Entropy (B) of the masked distributions given by `log_probs` (B, A) from masked_log_softmax.
torch::Tensor masked_entropy(const torch::Tensor& log_probs, const torch::Tensor& mask);

// The actor's log-probabilities (B, A) over each decision's actions.
torch::Tensor actor_log_probs(ActorCritic::Impl& net, const PackedDecisions& packed);

// PPO's clipped surrogate per sample, to be maximized: min(r A, clip(r, 1 - eps_low, 1 + eps_high) A).
// With eps_high > eps_low this is DAPO's clip-higher, the paper's asymmetric clipping.
torch::Tensor clipped_surrogate(const torch::Tensor& ratio, const torch::Tensor& advantage, double eps_low,
                                double eps_high);

}  // namespace kforge::rl
