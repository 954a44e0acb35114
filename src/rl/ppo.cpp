// PPO, rejection fine-tuning and critic regression in libtorch (ppo.h).
#include "rl/ppo.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "rl/torch_nets.h"

namespace kforge::rl {
namespace {

std::vector<std::vector<size_t>> minibatches(size_t n, int size, std::mt19937_64& rng) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<size_t>> out;
  size_t step = static_cast<size_t>(std::max(1, size));
  for (size_t i = 0; i < n; i += step) out.emplace_back(order.begin() + i, order.begin() + std::min(n, i + step));
  return out;
}

torch::Tensor value_loss(ActorCritic::Impl& net, const std::vector<ValueSample>& samples,
                         const std::vector<size_t>& batch) {
  auto x = torch::zeros({static_cast<int64_t>(batch.size()), net.dims.state_dim});
  auto y = torch::zeros({static_cast<int64_t>(batch.size())});
  auto xa = x.accessor<float, 2>();
  auto ya = y.accessor<float, 1>();
  for (size_t i = 0; i < batch.size(); ++i) {
    const ValueSample& s = samples[batch[i]];
    for (int k = 0; k < net.dims.state_dim; ++k) xa[static_cast<int64_t>(i)][k] = (*s.state)[k];
    ya[static_cast<int64_t>(i)] = static_cast<float>(s.target);
  }
  auto v = net.critic->forward(x).squeeze(1);
  return 0.5 * (v - y).pow(2).mean();
}

void step(torch::optim::Adam& optimizer, torch::nn::Module& module, const torch::Tensor& loss, double max_norm) {
  optimizer.zero_grad();
  loss.backward();
  torch::nn::utils::clip_grad_norm_(module.parameters(), max_norm);
  optimizer.step();
}

// Summed log-probabilities (N) of each sample's decisions, and the decisions' entropies (D).
std::pair<torch::Tensor, torch::Tensor> sample_log_probs(ActorCritic::Impl& net,
                                                         const std::vector<PolicySample>& samples,
                                                         const std::vector<size_t>& batch) {
  std::vector<const Decision*> decisions;
  std::vector<int64_t> owner;
  for (size_t i = 0; i < batch.size(); ++i) {
    for (const Decision* d : samples[batch[i]].decisions) {
      decisions.push_back(d);
      owner.push_back(static_cast<int64_t>(i));
    }
  }
  auto packed = pack_decisions(decisions, net.dims);
  auto lp = actor_log_probs(net, packed);                             // (D, A)
  auto chosen = lp.gather(1, packed.chosen.unsqueeze(1)).squeeze(1);  // (D)
  auto sums = torch::zeros({static_cast<int64_t>(batch.size())}).index_add(0, torch::tensor(owner), chosen);
  return {sums, masked_entropy(lp, packed.mask)};
}

}  // namespace

PpoStats ppo_update(ActorCritic& net, std::vector<PolicySample> policy, const std::vector<ValueSample>& value,
                    const PpoConfig& config, std::mt19937_64& rng) {
  auto& impl = net.impl();
  PpoStats stats;
  if (policy.empty()) return stats;
  if (config.normalize_advantages && policy.size() > 1) {
    double mean = 0, var = 0, n = static_cast<double>(policy.size());
    for (const auto& s : policy) mean += s.advantage / n;
    for (const auto& s : policy) var += (s.advantage - mean) * (s.advantage - mean) / n;
    double sd = std::sqrt(var) + 1e-8;
    for (auto& s : policy) s.advantage = (s.advantage - mean) / sd;
  }
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    bool last = epoch + 1 == config.epochs;
    double loss_sum = 0, entropy_sum = 0, clipped = 0;
    int batches = 0;
    for (const auto& batch : minibatches(policy.size(), config.minibatch, rng)) {
      auto [new_lp, entropy] = sample_log_probs(impl, policy, batch);
      std::vector<float> old_lp, adv, weight;
      for (size_t i : batch) {
        old_lp.push_back(static_cast<float>(policy[i].old_log_prob));
        adv.push_back(static_cast<float>(policy[i].advantage));
        weight.push_back(static_cast<float>(policy[i].weight));
      }
      auto ratio = torch::exp(new_lp - torch::tensor(old_lp));
      auto w = torch::tensor(weight);
      auto surrogate = clipped_surrogate(ratio, torch::tensor(adv), config.clip_low, config.clip_high);
      auto loss = -(surrogate * w).sum() / w.sum() - config.entropy_coef * entropy.mean();
      step(*impl.actor_optimizer, *impl.actor, loss, config.max_grad_norm);
      if (last) {
        torch::NoGradGuard no_grad;
        loss_sum += loss.item<double>();
        entropy_sum += entropy.mean().item<double>();
        auto out = (ratio < 1.0 - config.clip_low) | (ratio > 1.0 + config.clip_high);
        clipped += out.to(torch::kFloat32).sum().item<double>();
        ++batches;
      }
    }
    if (last && batches > 0) {
      stats.policy_loss = loss_sum / batches;
      stats.entropy = entropy_sum / batches;
      stats.clip_fraction = clipped / static_cast<double>(policy.size());
    }
  }
  if (!value.empty()) {
    SupervisedConfig vc{config.epochs, config.minibatch, config.max_grad_norm};
    stats.value_loss = value_update(net, value, vc, rng);
  }
  {
    torch::NoGradGuard no_grad;
    double kl = 0;
    for (const auto& batch : minibatches(policy.size(), 256, rng)) {
      auto [new_lp, entropy] = sample_log_probs(impl, policy, batch);
      std::vector<float> old_lp;
      for (size_t i : batch) old_lp.push_back(static_cast<float>(policy[i].old_log_prob));
      auto log_ratio = new_lp - torch::tensor(old_lp);
      kl += ((log_ratio.exp() - 1) - log_ratio).sum().item<double>();
    }
    stats.approx_kl = kl / static_cast<double>(policy.size());
  }
  return stats;
}

double cross_entropy_update(ActorCritic& net, const std::vector<const Decision*>& decisions,
                            const SupervisedConfig& config, std::mt19937_64& rng) {
  auto& impl = net.impl();
  double last_loss = 0;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    double sum = 0;
    for (const auto& batch : minibatches(decisions.size(), config.minibatch, rng)) {
      std::vector<const Decision*> picked;
      for (size_t i : batch) picked.push_back(decisions[i]);
      auto packed = pack_decisions(picked, impl.dims);
      auto lp = actor_log_probs(impl, packed).gather(1, packed.chosen.unsqueeze(1)).squeeze(1);
      auto loss = -lp.mean();
      step(*impl.actor_optimizer, *impl.actor, loss, config.max_grad_norm);
      sum += loss.item<double>() * static_cast<double>(batch.size());
    }
    last_loss = decisions.empty() ? 0 : sum / static_cast<double>(decisions.size());
  }
  return last_loss;
}

double value_update(ActorCritic& net, const std::vector<ValueSample>& samples, const SupervisedConfig& config,
                    std::mt19937_64& rng) {
  auto& impl = net.impl();
  double last_loss = 0;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    double sum = 0;
    for (const auto& batch : minibatches(samples.size(), config.minibatch, rng)) {
      auto loss = value_loss(impl, samples, batch);
      step(*impl.critic_optimizer, *impl.critic, loss, config.max_grad_norm);
      sum += loss.item<double>() * static_cast<double>(batch.size());
    }
    last_loss = samples.empty() ? 0 : sum / static_cast<double>(samples.size());
  }
  return last_loss;
}

double mean_entropy(const ActorCritic& net, const std::vector<const Decision*>& decisions) {
  if (decisions.empty()) return 0;
  torch::NoGradGuard no_grad;
  auto packed = pack_decisions(decisions, net.dims());
  auto lp = actor_log_probs(net.impl(), packed);
  return masked_entropy(lp, packed.mask).mean().item<double>();
}

}  // namespace kforge::rl
