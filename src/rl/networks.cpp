// The actor and critic in libtorch (networks.h, torch_nets.h): modules, packing, checkpoints.
#include "rl/networks.h"

#include <torch/serialize.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "agent/features.h"
#include "base/json.h"
#include "rl/torch_nets.h"

namespace kforge::rl {
namespace {

// Checkpoint format version: bump when the archive's layout changes.
constexpr int64_t kCheckpointVersion = 1;

torch::Tensor as_row(const std::vector<float>& v) {
  return torch::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())}, torch::kFloat32).clone();
}

std::shared_ptr<ActorCritic::Impl> make_impl(const NetworkDims& dims, double actor_lr, double critic_lr) {
  auto impl = std::make_shared<ActorCritic::Impl>();
  impl->dims = dims;
  impl->actor = Mlp(dims.state_dim + dims.action_dim, dims.hidden, 1);
  impl->critic = Mlp(dims.state_dim, dims.hidden, 1);
  impl->actor_optimizer =
      std::make_unique<torch::optim::Adam>(impl->actor->parameters(), torch::optim::AdamOptions(actor_lr));
  impl->critic_optimizer =
      std::make_unique<torch::optim::Adam>(impl->critic->parameters(), torch::optim::AdamOptions(critic_lr));
  return impl;
}

}  // namespace

MlpImpl::MlpImpl(int64_t in, int64_t hidden, int64_t out) {
  l1 = register_module("l1", torch::nn::Linear(in, hidden));
  l2 = register_module("l2", torch::nn::Linear(hidden, hidden));
  l3 = register_module("l3", torch::nn::Linear(hidden, out));
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  x = torch::tanh(l1->forward(x));
  x = torch::tanh(l2->forward(x));
  return l3->forward(x);
}

PackedDecisions pack_decisions(const std::vector<const Decision*>& decisions, const NetworkDims& dims) {
  int64_t b = static_cast<int64_t>(decisions.size());
  int64_t a = 1;
  for (const Decision* d : decisions) a = std::max<int64_t>(a, static_cast<int64_t>(d->actions.size()));
  int64_t s = dims.state_dim, f = dims.action_dim;
  PackedDecisions p;
  p.states = torch::zeros({b, s});
  p.pairs = torch::zeros({b, a, s + f});
  p.mask = torch::zeros({b, a}, torch::kBool);
  p.chosen = torch::zeros({b}, torch::kInt64);
  auto states = p.states.accessor<float, 2>();
  auto pairs = p.pairs.accessor<float, 3>();
  auto mask = p.mask.accessor<bool, 2>();
  auto chosen = p.chosen.accessor<int64_t, 1>();
  for (int64_t i = 0; i < b; ++i) {
    const Decision& d = *decisions[i];
    KF_CHECK(static_cast<int64_t>(d.state.size()) == s) << "state features: " << d.state.size() << " != " << s;
    KF_CHECK(d.chosen >= 0 && d.chosen < static_cast<int>(d.actions.size())) << "chosen " << d.chosen;
    for (int64_t k = 0; k < s; ++k) states[i][k] = d.state[k];
    for (size_t j = 0; j < d.actions.size(); ++j) {
      KF_CHECK(static_cast<int64_t>(d.actions[j].size()) == f) << "action features: " << d.actions[j].size();
      for (int64_t k = 0; k < s; ++k) pairs[i][j][k] = d.state[k];
      for (int64_t k = 0; k < f; ++k) pairs[i][j][s + k] = d.actions[j][k];
      mask[i][j] = true;
    }
    chosen[i] = d.chosen;
  }
  return p;
}

torch::Tensor masked_log_softmax(const torch::Tensor& scores, const torch::Tensor& mask) {
  auto filled = scores.masked_fill(mask.logical_not(), -1e9);
  return torch::log_softmax(filled, 1).masked_fill(mask.logical_not(), 0.0);
}

torch::Tensor masked_entropy(const torch::Tensor& log_probs, const torch::Tensor& mask) {
  auto p = log_probs.exp().masked_fill(mask.logical_not(), 0.0);
  return -(p * log_probs).sum(1);
}

torch::Tensor actor_log_probs(ActorCritic::Impl& net, const PackedDecisions& packed) {
  auto scores = net.actor->forward(packed.pairs).squeeze(-1);  // (B, A)
  return masked_log_softmax(scores, packed.mask);
}

torch::Tensor clipped_surrogate(const torch::Tensor& ratio, const torch::Tensor& advantage, double eps_low,
                                double eps_high) {
  auto clipped = torch::clamp(ratio, 1.0 - eps_low, 1.0 + eps_high);
  return torch::min(ratio * advantage, clipped * advantage);
}

ActorCritic ActorCritic::create(const NetworkDims& dims, uint64_t seed, double actor_lr, double critic_lr) {
  KF_CHECK(dims.state_dim > 0 && dims.action_dim > 0 && dims.hidden > 0)
      << "network dims " << dims.state_dim << ", " << dims.action_dim << ", " << dims.hidden;
  torch::manual_seed(seed);
  ActorCritic ac(make_impl(dims, actor_lr, critic_lr));
  ac.counters.stage = "init";
  ac.action_space = agent::current_action_space();
  return ac;
}

const NetworkDims& ActorCritic::dims() const {
  return impl_->dims;
}

void ActorCritic::set_learning_rates(double actor_lr, double critic_lr) {
  for (auto& group : impl_->actor_optimizer->param_groups())
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(actor_lr);
  for (auto& group : impl_->critic_optimizer->param_groups())
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(critic_lr);
}

std::vector<double> ActorCritic::log_probs(const std::vector<float>& state,
                                           const std::vector<std::vector<float>>& actions) const {
  Decision d{state, actions, 0};
  torch::NoGradGuard no_grad;
  auto packed = pack_decisions({&d}, impl_->dims);
  auto lp = actor_log_probs(*impl_, packed)[0].contiguous();
  std::vector<double> out(actions.size());
  auto acc = lp.accessor<float, 1>();
  for (size_t j = 0; j < actions.size(); ++j) out[j] = acc[static_cast<int64_t>(j)];
  return out;
}

double ActorCritic::value(const std::vector<float>& state) const {
  KF_CHECK(static_cast<int>(state.size()) == impl_->dims.state_dim) << "state features: " << state.size();
  torch::NoGradGuard no_grad;
  return impl_->critic->forward(as_row(state)).item<float>();
}

std::vector<double> ActorCritic::chosen_log_probs(const std::vector<const Decision*>& decisions) const {
  if (decisions.empty()) return {};
  torch::NoGradGuard no_grad;
  auto packed = pack_decisions(decisions, impl_->dims);
  auto lp = actor_log_probs(*impl_, packed).gather(1, packed.chosen.unsqueeze(1)).squeeze(1).contiguous();
  auto acc = lp.accessor<float, 1>();
  std::vector<double> out(decisions.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = acc[static_cast<int64_t>(i)];
  return out;
}

std::vector<double> ActorCritic::values(const std::vector<const std::vector<float>*>& states) const {
  if (states.empty()) return {};
  torch::NoGradGuard no_grad;
  auto x = torch::zeros({static_cast<int64_t>(states.size()), impl_->dims.state_dim});
  auto acc = x.accessor<float, 2>();
  for (size_t i = 0; i < states.size(); ++i) {
    KF_CHECK(static_cast<int>(states[i]->size()) == impl_->dims.state_dim) << "state features: " << states[i]->size();
    for (int k = 0; k < impl_->dims.state_dim; ++k) acc[static_cast<int64_t>(i)][k] = (*states[i])[k];
  }
  auto v = impl_->critic->forward(x).squeeze(1).contiguous();
  auto va = v.accessor<float, 1>();
  std::vector<double> out(states.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = va[static_cast<int64_t>(i)];
  return out;
}

Status ActorCritic::save(const std::string& path) const {
  namespace fs = std::filesystem;
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  fs::path tmp = target;
  tmp += ".tmp." + std::to_string(::getpid());
  try {
    torch::serialize::OutputArchive archive;
    archive.write("version", torch::tensor(kCheckpointVersion));
    archive.write(
        "dims", torch::tensor(std::vector<int64_t>{impl_->dims.state_dim, impl_->dims.action_dim, impl_->dims.hidden}));
    archive.write("iteration", torch::tensor(static_cast<int64_t>(counters.iteration)));
    std::vector<int64_t> stage(counters.stage.begin(), counters.stage.end());
    archive.write("stage", torch::tensor(stage.empty() ? std::vector<int64_t>{0} : stage));
    if (action_space) {
      const std::string text = agent::action_space_to_json(*action_space).dump();
      archive.write("action_space", torch::tensor(std::vector<int64_t>(text.begin(), text.end())));
    }
    torch::serialize::OutputArchive actor, critic, actor_opt, critic_opt;
    impl_->actor->save(actor);
    impl_->critic->save(critic);
    impl_->actor_optimizer->save(actor_opt);
    impl_->critic_optimizer->save(critic_opt);
    archive.write("actor", actor);
    archive.write("critic", critic);
    archive.write("actor_optimizer", actor_opt);
    archive.write("critic_optimizer", critic_opt);
    archive.save_to(tmp.string());
  } catch (const std::exception& e) {
    fs::remove(tmp, ec);
    return external_error("could not write the checkpoint " + path + ": " + e.what());
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return external_error("could not move the checkpoint into place at " + path + ": " + ec.message());
  }
  return Status::ok();
}

StatusOr<ActorCritic> ActorCritic::load(const std::string& path) {
  if (!std::filesystem::exists(path)) return not_found("no checkpoint at " + path);
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::Tensor version, dims_t, iteration, stage_t;
    archive.read("version", version);
    if (version.item<int64_t>() != kCheckpointVersion) {
      return unsupported(path + " is a checkpoint of format " + std::to_string(version.item<int64_t>()) +
                         "; this kforge reads format " + std::to_string(kCheckpointVersion));
    }
    archive.read("dims", dims_t);
    archive.read("iteration", iteration);
    archive.read("stage", stage_t);
    NetworkDims dims;
    dims.state_dim = static_cast<int>(dims_t[0].item<int64_t>());
    dims.action_dim = static_cast<int>(dims_t[1].item<int64_t>());
    dims.hidden = static_cast<int>(dims_t[2].item<int64_t>());
    if (dims.state_dim <= 0 || dims.action_dim <= 0 || dims.hidden <= 0) {
      return invalid_argument(path + ": the checkpoint's network dimensions are not positive");
    }
    ActorCritic ac(make_impl(dims, 3e-4, 1e-3));
    ac.counters.iteration = static_cast<int>(iteration.item<int64_t>());
    for (int64_t i = 0; i < stage_t.numel(); ++i) {
      int64_t c = stage_t[i].item<int64_t>();
      if (c != 0) ac.counters.stage.push_back(static_cast<char>(c));
    }
    torch::Tensor action_space_t;
    if (archive.try_read("action_space", action_space_t)) {
      std::string text;
      for (int64_t i = 0; i < action_space_t.numel(); ++i)
        text.push_back(static_cast<char>(action_space_t[i].item<int64_t>()));
      auto j = parse_json(text, path + " (its action space)");
      if (!j.is_ok()) return j.status();
      auto v = agent::action_space_from_json(*j);
      if (!v.is_ok()) return invalid_argument(path + ": " + v.status().message());
      ac.action_space = std::move(v).value();
    }
    torch::serialize::InputArchive actor, critic, actor_opt, critic_opt;
    archive.read("actor", actor);
    archive.read("critic", critic);
    archive.read("actor_optimizer", actor_opt);
    archive.read("critic_optimizer", critic_opt);
    ac.impl_->actor->load(actor);
    ac.impl_->critic->load(critic);
    ac.impl_->actor_optimizer->load(actor_opt);
    ac.impl_->critic_optimizer->load(critic_opt);
    return ac;
  } catch (const std::exception& e) {
    return invalid_argument(path + " is not a kforge checkpoint (or is damaged): " + e.what());
  }
}

Status check_dims(const NetworkDims& dims, int state_dim, int action_dim) {
  if (dims.state_dim == state_dim && dims.action_dim == action_dim) return Status::ok();
  return invalid_argument("the checkpoint's networks take " + std::to_string(dims.state_dim) + " state and " +
                          std::to_string(dims.action_dim) + " action features, but the environment gives " +
                          std::to_string(state_dim) + " and " + std::to_string(action_dim) +
                          " (features changed since it was trained: train again)");
}

std::string checkpoint_refresh_command(const std::string& path) {
  const std::string shipped = "policies/learned-ci.pt";
  if (path.size() >= shipped.size() && path.compare(path.size() - shipped.size(), shipped.size(), shipped) == 0) {
    return "`kforge train --preset ci --out RUN --eval-tasks ../shared/kernelbench/level1 ../shared/kernelbench/level2"
           " && cp RUN/ppo.pt " +
           path + "` (policies/README.md; the cost model, a minute on a CPU)";
  }
  return "`kforge train --out RUN ...` with this kforge, then use RUN/ppo.pt";
}

StatusOr<std::vector<std::string>> remap_skill_slots(ActorCritic& net) {
  const agent::ActionSpaceVersion& now = agent::current_action_space();
  if (!net.action_space) {
    return invalid_argument(
        "the checkpoint does not say which skill each slot stands for (written before "
        "checkpoints carried their action space)");
  }
  const agent::ActionSpaceVersion& was = *net.action_space;
  if (was.state_dim != now.state_dim || was.action_dim != now.action_dim || was.max_skills != now.max_skills ||
      net.dims().state_dim != now.state_dim || net.dims().action_dim != now.action_dim) {
    return invalid_argument("the checkpoint's feature sizes differ from this kforge's");
  }
  std::map<std::string, int64_t> slot_was;
  for (size_t i = 0; i < was.skills.size(); ++i) slot_was[was.skills[i]] = static_cast<int64_t>(i);
  std::vector<std::string> unseen;
  torch::NoGradGuard no_grad;
  torch::Tensor w = net.impl().actor->l1->weight;  // (hidden, state + action features)
  const int64_t first = now.state_dim + agent::kActionSkill;
  torch::Tensor before = w.narrow(1, first, now.max_skills).clone();
  w.narrow(1, first, now.max_skills).zero_();
  for (size_t j = 0; j < now.skills.size(); ++j) {
    auto it = slot_was.find(now.skills[j]);
    if (it == slot_was.end()) {
      unseen.push_back(now.skills[j]);
      continue;
    }
    w.select(1, first + static_cast<int64_t>(j)).copy_(before.select(1, it->second));
  }
  agent::ActionSpaceVersion remapped = was;
  remapped.skills = now.skills;
  remapped.fingerprint = agent::fingerprint_of(remapped);
  net.action_space = std::move(remapped);
  return unseen;
}

Status check_action_space(const ActorCritic& net, const std::string& path) {
  if (net.action_space && net.action_space->fingerprint == agent::action_space_fingerprint()) return Status::ok();
  return invalid_argument(
      path + ": a policy " + agent::action_space_difference(net.action_space) +
      "; its action slots may stand for other skills. Make it again: " + checkpoint_refresh_command(path));
}

}  // namespace kforge::rl
