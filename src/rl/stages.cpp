// The paper's training stages (stages.h) on the agent's environment.
#include "rl/stages.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "agent/features.h"
#include "agent/policy.h"
#include "base/files.h"
#include "rl/advantage.h"
#include "rl/learned_policy.h"
#include "rl/networks.h"
#include "rl/trajectory.h"

namespace kforge::rl {
namespace fs = std::filesystem;
namespace {

constexpr double kGamma = 1.0;
constexpr double kLambda = 0.95;

// Episode statistics shared by every stage's metrics line.
struct EpisodeStats {
  double mean_reward = 0;
  double pass_rate = 0;
  double faster_rate = 0;
  double turns = 0;
  int episodes = 0;
};

EpisodeStats summarize(const std::vector<double>& rewards, const std::vector<bool>& faster,
                       const std::vector<int>& turns) {
  EpisodeStats s;
  s.episodes = static_cast<int>(rewards.size());
  if (rewards.empty()) return s;
  double n = static_cast<double>(rewards.size());
  for (size_t i = 0; i < rewards.size(); ++i) {
    s.mean_reward += rewards[i] / n;
    s.pass_rate += (rewards[i] > 0 ? 1.0 : 0.0) / n;
    s.faster_rate += (faster[i] ? 1.0 : 0.0) / n;
    s.turns += turns[i] / n;
  }
  return s;
}

OrderedJson metrics_line(const std::string& stage, int iteration, const EpisodeStats& e) {
  OrderedJson j;
  j["stage"] = stage;
  j["iteration"] = iteration;
  j["episodes"] = e.episodes;
  j["mean_reward"] = e.mean_reward;
  j["pass_rate"] = e.pass_rate;
  j["faster_than_compile_rate"] = e.faster_rate;
  j["turns_per_episode"] = e.turns;
  return j;
}

// Metrics lines of `stage` at or past `from_iteration` belong to an iteration whose checkpoint was
// never written (a kill in between): they go before the stage continues.
Status prune_metrics(const fs::path& path, const std::string& stage, int from_iteration) {
  if (!fs::exists(path)) return Status::ok();
  KF_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::istringstream in(text);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = parse_json(line, path.string());
    if (!j.is_ok()) continue;  // a torn line
    if (j->value("stage", "") == stage && j->value("iteration", 0) >= from_iteration) continue;
    kept += line + "\n";
  }
  return write_file(path, kept);
}

Status append_metrics(const fs::path& path, const OrderedJson& line) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << line.dump() << "\n";
  out.flush();
  if (!out) return external_error("cannot append to " + path.string());
  return Status::ok();
}

void say(const StageContext& c, const std::string& line) {
  if (c.progress) c.progress(line);
}

std::string fmt(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, format, a, b, c, d);
  return buffer;
}

// The network a stage starts from: its own checkpoint when resuming, else the previous stage's
// (`from`), else fresh weights.
struct Start {
  ActorCritic net;
  int iteration = 0;
};

StatusOr<Start> start_from(const StageContext& c, const std::string& stage, const std::string& from) {
  fs::path own = checkpoint_path(c.out, stage);
  if (fs::exists(own)) {
    KF_ASSIGN_OR_RETURN(ActorCritic net, ActorCritic::load(own.string()));
    KF_RETURN_IF_ERROR(check_dims(net.dims(), agent::kStateDim, agent::kActionDim));
    KF_RETURN_IF_ERROR(check_action_space(net, own.string()));
    int it = net.counters.iteration;
    KF_RETURN_IF_ERROR(prune_metrics(metrics_path(c.out), stage, it));
    return Start{std::move(net), it};
  }
  KF_RETURN_IF_ERROR(prune_metrics(metrics_path(c.out), stage, 0));
  if (from.empty()) {
    NetworkDims dims{agent::kStateDim, agent::kActionDim, c.preset.hidden};
    return Start{ActorCritic::create(dims, derive_seed(c.seed, "init", 0), c.preset.actor_lr, c.preset.critic_lr), 0};
  }
  fs::path previous = checkpoint_path(c.out, from);
  if (!fs::exists(previous)) {
    return invalid_argument("the " + stage + " stage starts from the " + from + " stage's checkpoint, and " +
                            previous.string() + " does not exist: run `kforge train --stage " + from +
                            "` first (or --stage all)");
  }
  KF_ASSIGN_OR_RETURN(ActorCritic net, ActorCritic::load(previous.string()));
  KF_RETURN_IF_ERROR(check_dims(net.dims(), agent::kStateDim, agent::kActionDim));
  KF_RETURN_IF_ERROR(check_action_space(net, previous.string()));
  return Start{std::move(net), 0};
}

Status save_iteration(ActorCritic& net, const StageContext& c, const std::string& stage, int done, OrderedJson line) {
  net.counters = {stage, done};
  KF_RETURN_IF_ERROR(net.save(checkpoint_path(c.out, stage).string()));
  return append_metrics(metrics_path(c.out), line);
}

// A stage the ablation leaves out: the network passes through unchanged (its checkpoint is written, so
// that the next stage starts from it), and the metrics say so.
StatusOr<OrderedJson> skip_stage(ActorCritic& net, const StageContext& c, const std::string& stage, int iterations,
                                 const EpisodeStats& stats) {
  OrderedJson line = metrics_line(stage, 0, stats);
  line["skipped"] = "ablation " + c.ablation;
  KF_RETURN_IF_ERROR(save_iteration(net, c, stage, iterations, line));
  say(c, stage + ": skipped (ablation " + c.ablation + "): the network passes through unchanged");
  return line;
}

const agent::Task& pick_task(const StageContext& c, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, c.train.size() - 1);
  return c.train[pick(rng)];
}

// The single-turn view of a state: the measurement features (last and best candidate, outcome) are
// zeroed, so that a plan is chosen without execution feedback.
std::vector<float> open_loop_features(std::vector<float> f) {
  for (int i = agent::kStateLastVsEager; i <= agent::kStateBestReward; ++i) f[static_cast<size_t>(i)] = 0;
  for (int i = 0; i < agent::kNumOutcomes; ++i) f[static_cast<size_t>(agent::kStateOutcome + i)] = 0;
  return f;
}

struct Plan {
  std::vector<Decision> decisions;
  double reward = -1;
  bool faster = false;
};

// Samples a whole plan for `task` and scores the schedule it ends on.
StatusOr<Plan> sample_plan(const StageContext& c, agent::Environment& env, const ActorCritic& net,
                           const agent::Task& task, std::mt19937_64& rng) {
  KF_RETURN_IF_ERROR(env.reset(task).status());
  Plan plan;
  while (!env.done()) {
    const agent::Observation& obs = env.observation();
    Decision d{open_loop_features(obs.state_features), obs.action_features, 0};
    d.chosen = pick_action(net.log_probs(d.state, d.actions), ActionChoice::kSample, rng);
    plan.decisions.push_back(std::move(d));
    KF_RETURN_IF_ERROR(env.step(plan.decisions.back().chosen).status());
  }
  const agent::Evaluation& last = env.observation().last;
  bool ok = last.result.outcome == sandbox::Outcome::kOk;
  plan.reward = training_reward(c, ok ? &last : nullptr, last.reward.value_or(ok ? 1 : -1));
  plan.faster =
      ok && last.result.t_candidate && last.result.t_compile && *last.result.t_candidate < *last.result.t_compile;
  return plan;
}

StatusOr<OrderedJson> run_warmup(const StageContext& c) {
  KF_ASSIGN_OR_RETURN(Start start, start_from(c, "warmup", ""));
  ActorCritic& net = start.net;
  net.set_learning_rates(c.preset.actor_lr, c.preset.critic_lr);
  agent::Environment env(c.evaluator, agent::EnvConfig{.max_turns = c.preset.warmup_plan_turns});
  OrderedJson line;
  for (int it = start.iteration; it < c.preset.warmup_iterations; ++it) {
    std::mt19937_64 rng(derive_seed(c.seed, "warmup", static_cast<uint64_t>(it)));
    std::vector<Plan> plans;
    std::vector<double> rewards;
    std::vector<bool> faster;
    std::vector<int> turns;
    for (int p = 0; p < c.preset.warmup_plans; ++p) {
      const agent::Task& task = pick_task(c, rng);
      KF_ASSIGN_OR_RETURN(Plan plan, sample_plan(c, env, net, task, rng));
      rewards.push_back(plan.reward);
      faster.push_back(plan.faster);
      turns.push_back(static_cast<int>(plan.decisions.size()));
      plans.push_back(std::move(plan));
    }
    std::vector<const std::vector<float>*> first_states;
    for (const Plan& p : plans) first_states.push_back(&p.decisions.front().state);
    std::vector<double> values = net.values(first_states);
    std::vector<PolicySample> samples;
    std::vector<ValueSample> targets;
    for (size_t i = 0; i < plans.size(); ++i) {
      PolicySample s;
      for (const Decision& d : plans[i].decisions) s.decisions.push_back(&d);
      for (double lp : net.chosen_log_probs(s.decisions)) s.old_log_prob += lp;
      s.advantage = plans[i].reward - values[i];
      samples.push_back(std::move(s));
      targets.push_back({first_states[i], plans[i].reward});
    }
    PpoStats stats = ppo_update(net, samples, targets, c.preset.ppo, rng);
    line = metrics_line("warmup", it, summarize(rewards, faster, turns));
    line["entropy"] = stats.entropy;
    line["approx_kl"] = stats.approx_kl;
    line["clip_fraction"] = stats.clip_fraction;
    line["explained_variance"] = explained_variance(values, rewards);
    line["value_loss"] = stats.value_loss;
    KF_RETURN_IF_ERROR(save_iteration(net, c, "warmup", it + 1, line));
    say(c, "warmup " + std::to_string(it + 1) + "/" + std::to_string(c.preset.warmup_iterations) +
               fmt(": mean reward %.2f, entropy %.3f, kl %.4f", line["mean_reward"].get<double>(), stats.entropy,
                   stats.approx_kl));
  }
  return line;
}

// One multi-turn episode of the learned policy, as training keeps it.
StatusOr<Trajectory> run_learned_episode(const StageContext& c, agent::Environment& env,
                                         std::shared_ptr<const ActorCritic> net, const agent::Task& task,
                                         uint64_t seed) {
  std::vector<std::string> schedules;
  auto policy = make_learned_policy(std::move(net), ActionChoice::kSample, &schedules);
  KF_ASSIGN_OR_RETURN(agent::Episode ep, agent::run_episode(env, *policy, task, seed));
  Trajectory t;
  t.task = task.name;
  t.seed = seed;
  const auto& best = env.observation().best;
  t.reward = training_reward(c, best ? &*best : nullptr, ep.reward);
  t.faster_than_compile = ep.faster_than_compile;
  t.evaluations = ep.evaluations;
  t.schedules = std::move(schedules);
  for (auto& tr : ep.transitions) {
    t.decisions.push_back(Decision{std::move(tr.state_features), std::move(tr.action_features), tr.action});
    t.action_names.push_back(std::move(tr.action_name));
    t.outcomes.push_back(std::move(tr.outcome));
  }
  return t;
}

EpisodeStats summarize(const std::vector<Trajectory>& ts) {
  std::vector<double> rewards;
  std::vector<bool> faster;
  std::vector<int> turns;
  for (const auto& t : ts) {
    rewards.push_back(t.reward);
    faster.push_back(t.faster_than_compile);
    turns.push_back(static_cast<int>(t.decisions.size()));
  }
  return summarize(rewards, faster, turns);
}

StatusOr<OrderedJson> run_collect(const StageContext& c) {
  fs::path warm = checkpoint_path(c.out, "warmup");
  if (!fs::exists(warm)) {
    return invalid_argument("collect runs the warmed policy, and " + warm.string() +
                            " does not exist: run `kforge train --stage warmup` first (or --stage all)");
  }
  KF_ASSIGN_OR_RETURN(ActorCritic loaded, ActorCritic::load(warm.string()));
  KF_RETURN_IF_ERROR(check_dims(loaded.dims(), agent::kStateDim, agent::kActionDim));
  KF_RETURN_IF_ERROR(check_action_space(loaded, warm.string()));
  auto net = std::make_shared<const ActorCritic>(std::move(loaded));
  fs::path path = trajectories_path(c.out);
  std::vector<Trajectory> done;
  if (fs::exists(path)) {
    int64_t complete = 0;
    KF_ASSIGN_OR_RETURN(done, read_trajectories(path.string(), &complete));
    fs::resize_file(path, static_cast<uintmax_t>(complete));  // drop a torn last line
  }
  KF_RETURN_IF_ERROR(prune_metrics(metrics_path(c.out), "collect", 0));
  agent::Environment env(c.evaluator, agent::EnvConfig{.max_turns = c.preset.train_turns});
  std::ofstream out(path, std::ios::app | std::ios::binary);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = static_cast<int>(done.size()); i < c.preset.collect_episodes; ++i) {
    const agent::Task& task = c.train[static_cast<size_t>(i) % c.train.size()];
    KF_ASSIGN_OR_RETURN(
        Trajectory t, run_learned_episode(c, env, net, task, derive_seed(c.seed, "collect", static_cast<uint64_t>(i))));
    out << trajectory_to_json(t).dump() << "\n";
    out.flush();
    if (!out) return external_error("cannot append to " + path.string());
    done.push_back(std::move(t));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if ((i + 1) % 20 == 0 || i + 1 == c.preset.collect_episodes) {
      say(c, "collect " + std::to_string(i + 1) + "/" + std::to_string(c.preset.collect_episodes) +
                 fmt(" episodes (%.0f s)", s));
    }
  }
  OrderedJson line = metrics_line("collect", 0, summarize(done));
  int evaluations = 0;
  for (const auto& t : done) evaluations += t.evaluations;
  line["evaluations"] = evaluations;
  KF_RETURN_IF_ERROR(append_metrics(metrics_path(c.out), line));
  return line;
}

StatusOr<std::vector<Trajectory>> collected(const StageContext& c, const std::string& stage) {
  fs::path path = trajectories_path(c.out);
  if (!fs::exists(path)) {
    return invalid_argument("the " + stage + " stage trains on collected episodes, and " + path.string() +
                            " does not exist: run `kforge train --stage collect` first (or --stage all)");
  }
  KF_ASSIGN_OR_RETURN(std::vector<Trajectory> ts, read_trajectories(path.string()));
  if (static_cast<int>(ts.size()) < c.preset.collect_episodes) {
    return invalid_argument(path.string() + " holds " + std::to_string(ts.size()) + " of the " +
                            std::to_string(c.preset.collect_episodes) +
                            " episodes: finish the collect stage first (kforge train --stage collect --resume)");
  }
  return ts;
}

StatusOr<OrderedJson> run_rft(const StageContext& c) {
  KF_ASSIGN_OR_RETURN(std::vector<Trajectory> ts, collected(c, "rft"));
  RftFilterStats filter;
  std::vector<const Decision*> kept = rft_filter(ts, &filter);
  if (kept.empty()) {
    return invalid_argument("rejection fine-tuning kept no decision: none of the " + std::to_string(ts.size()) +
                            " collected episodes has reward > 0 without loops or invalid actions");
  }
  KF_ASSIGN_OR_RETURN(Start start, start_from(c, "rft", "warmup"));
  ActorCritic& net = start.net;
  net.set_learning_rates(c.preset.actor_lr, c.preset.critic_lr);
  OrderedJson line;
  if (c.ablation == "no-rft") return skip_stage(net, c, "rft", c.preset.rft_epochs, summarize(ts));
  for (int it = start.iteration; it < c.preset.rft_epochs; ++it) {
    std::mt19937_64 rng(derive_seed(c.seed, "rft", static_cast<uint64_t>(it)));
    SupervisedConfig one = c.preset.supervised;
    one.epochs = 1;
    double loss = cross_entropy_update(net, kept, one, rng);
    line = metrics_line("rft", it, summarize(ts));
    line["cross_entropy"] = loss;
    line["entropy"] = mean_entropy(net, kept);
    line["kept_episodes"] = filter.kept_episodes;
    line["kept_decisions"] = filter.kept_decisions;
    line["dropped_loops"] = filter.dropped_loops;
    line["dropped_invalid"] = filter.dropped_invalid;
    KF_RETURN_IF_ERROR(save_iteration(net, c, "rft", it + 1, line));
    say(c, "rft " + std::to_string(it + 1) + "/" + std::to_string(c.preset.rft_epochs) +
               fmt(": cross-entropy %.4f on %.0f decisions (%.0f of %.0f episodes kept)", loss, filter.kept_decisions,
                   filter.kept_episodes, filter.episodes));
  }
  return line;
}

// GAE(1, 0.95) advantages and critic targets for each decision of each trajectory, with the outcome
// reward on the last step. Fills `values` (V(s_t) before any update) alongside.
void advantages_and_targets(const ActorCritic& net, const std::vector<Trajectory>& ts,
                            std::vector<std::vector<double>>* advantages, std::vector<ValueSample>* targets,
                            std::vector<double>* values_flat) {
  for (const Trajectory& t : ts) {
    std::vector<const std::vector<float>*> states;
    for (const Decision& d : t.decisions) states.push_back(&d.state);
    std::vector<double> v = net.values(states);
    std::vector<double> r(t.decisions.size(), 0.0);
    if (!r.empty()) r.back() = t.reward;
    std::vector<double> a = gae(r, v, kGamma, kLambda);
    for (size_t i = 0; i < a.size(); ++i) {
      targets->push_back({states[i], v[i] + a[i]});
      values_flat->push_back(v[i]);
    }
    advantages->push_back(std::move(a));
  }
}

// Monte-Carlo returns (gamma = 1: the episode's reward at every step), for explained variance.
std::vector<double> returns_of(const std::vector<Trajectory>& ts) {
  std::vector<double> out;
  for (const Trajectory& t : ts) out.insert(out.end(), t.decisions.size(), t.reward);
  return out;
}

StatusOr<OrderedJson> run_value(const StageContext& c) {
  KF_ASSIGN_OR_RETURN(std::vector<Trajectory> ts, collected(c, "value"));
  KF_ASSIGN_OR_RETURN(Start start, start_from(c, "value", "rft"));
  ActorCritic& net = start.net;
  net.set_learning_rates(c.preset.actor_lr, c.preset.critic_lr);
  std::vector<double> returns = returns_of(ts);
  OrderedJson line;
  if (c.ablation == "no-value-pretraining") return skip_stage(net, c, "value", c.preset.value_rounds, summarize(ts));
  for (int it = start.iteration; it < c.preset.value_rounds; ++it) {
    std::mt19937_64 rng(derive_seed(c.seed, "value", static_cast<uint64_t>(it)));
    std::vector<std::vector<double>> advantages;
    std::vector<ValueSample> targets;
    std::vector<double> values;
    advantages_and_targets(net, ts, &advantages, &targets, &values);
    SupervisedConfig config = c.preset.supervised;
    config.epochs = c.preset.value_epochs;
    double loss = value_update(net, targets, config, rng);
    std::vector<const std::vector<float>*> states;
    for (const auto& s : targets) states.push_back(s.state);
    line = metrics_line("value", it, summarize(ts));
    line["value_loss"] = loss;
    line["explained_variance"] = explained_variance(net.values(states), returns);
    KF_RETURN_IF_ERROR(save_iteration(net, c, "value", it + 1, line));
    say(c, "value " + std::to_string(it + 1) + "/" + std::to_string(c.preset.value_rounds) +
               fmt(": loss %.4f, explained variance %.3f", loss, line["explained_variance"].get<double>()));
  }
  return line;
}

StatusOr<OrderedJson> run_ppo(const StageContext& c) {
  KF_ASSIGN_OR_RETURN(Start start, start_from(c, "ppo", "value"));
  auto net = std::make_shared<ActorCritic>(std::move(start.net));
  net->set_learning_rates(c.preset.actor_lr, c.preset.critic_lr);
  agent::Environment env(c.evaluator, agent::EnvConfig{.max_turns = c.preset.train_turns});
  OrderedJson line;
  for (int it = start.iteration; it < c.preset.ppo_iterations; ++it) {
    std::mt19937_64 rng(derive_seed(c.seed, "ppo", static_cast<uint64_t>(it)));
    std::vector<Trajectory> ts;
    int evaluations = 0;
    for (int e = 0; e < c.preset.ppo_episodes; ++e) {
      const agent::Task& task = pick_task(c, rng);
      KF_ASSIGN_OR_RETURN(Trajectory t, run_learned_episode(c, env, net, task, rng()));
      evaluations += t.evaluations;
      ts.push_back(std::move(t));
    }
    std::vector<std::vector<double>> advantages;
    std::vector<ValueSample> targets;
    std::vector<double> values;
    advantages_and_targets(*net, ts, &advantages, &targets, &values);
    std::vector<PolicySample> samples;
    for (size_t i = 0; i < ts.size(); ++i) {
      std::vector<const Decision*> ds;
      for (const Decision& d : ts[i].decisions) ds.push_back(&d);
      std::vector<double> old = net->chosen_log_probs(ds);
      double weight = 1.0 / static_cast<double>(std::max<size_t>(1, ds.size()));
      for (size_t k = 0; k < ds.size(); ++k) samples.push_back({{ds[k]}, old[k], advantages[i][k], weight});
    }
    PpoStats stats = ppo_update(*net, samples, targets, c.preset.ppo, rng);
    line = metrics_line("ppo", it, summarize(ts));
    line["entropy"] = stats.entropy;
    line["approx_kl"] = stats.approx_kl;
    line["clip_fraction"] = stats.clip_fraction;
    line["explained_variance"] = explained_variance(values, returns_of(ts));
    line["value_loss"] = stats.value_loss;
    line["evaluations"] = evaluations;
    KF_RETURN_IF_ERROR(save_iteration(*net, c, "ppo", it + 1, line));
    say(c,
        "ppo " + std::to_string(it + 1) + "/" + std::to_string(c.preset.ppo_iterations) +
            fmt(": mean reward %.2f, entropy %.3f, kl %.4f, explained variance %.3f", line["mean_reward"].get<double>(),
                stats.entropy, stats.approx_kl, line["explained_variance"].get<double>()));
  }
  return line;
}

}  // namespace

Preset ci_preset() {
  Preset p;
  p.name = "ci";
  p.synth_tasks = 200;
  p.hidden = 64;
  p.train_turns = 32;
  p.eval_budget = 32;
  p.random_repeats = 3;
  p.warmup_iterations = 40;
  p.warmup_plans = 64;
  p.warmup_plan_turns = 16;
  p.collect_episodes = 400;
  p.rft_epochs = 8;
  p.value_rounds = 6;
  p.value_epochs = 4;
  p.ppo_iterations = 40;
  p.ppo_episodes = 64;
  p.actor_lr = 1e-3;
  p.critic_lr = 2e-3;
  p.ppo.epochs = 4;
  p.ppo.minibatch = 128;
  p.supervised.minibatch = 128;
  return p;
}

Preset full_preset() {
  Preset p;
  p.name = "full";
  p.synth_tasks = 1000;
  p.hidden = 128;
  p.train_turns = 150;
  p.eval_budget = 200;
  p.random_repeats = 3;
  p.warmup_iterations = 100;
  p.warmup_plans = 256;
  p.warmup_plan_turns = 32;
  p.collect_episodes = 4000;
  p.rft_epochs = 8;
  p.value_rounds = 8;
  p.value_epochs = 4;
  p.ppo_iterations = 150;  // the paper's 150 training steps
  p.ppo_episodes = 128;
  p.actor_lr = 3e-4;
  p.critic_lr = 6e-4;  // the paper's critic/actor ratio of 2
  p.ppo.epochs = 4;
  p.ppo.minibatch = 256;
  p.supervised.minibatch = 256;
  return p;
}

StatusOr<Preset> preset_named(const std::string& name) {
  if (name == "ci") return ci_preset();
  if (name == "full") return full_preset();
  return invalid_argument("unknown preset '" + name + "': use ci or full");
}

const std::vector<std::string>& stage_names() {
  static const std::vector<std::string> names = {"warmup", "collect", "rft", "value", "ppo"};
  return names;
}

const std::vector<std::string>& ablation_names() {
  static const std::vector<std::string> names = {"none", "no-rft", "no-value-pretraining", "continuous-reward"};
  return names;
}

double training_reward(const StageContext& c, const agent::Evaluation* best, double milestone) {
  if (c.ablation != "continuous-reward") return milestone;
  if (best == nullptr || best->result.outcome != sandbox::Outcome::kOk) return -1;
  const auto& r = best->result;
  if (!r.t_candidate || !r.t_compile || *r.t_candidate <= 0) return milestone;  // no times: nothing to scale
  return *r.t_compile / *r.t_candidate;
}

fs::path checkpoint_path(const fs::path& out, const std::string& stage) {
  return out / (stage + ".pt");
}
fs::path trajectories_path(const fs::path& out) {
  return out / "trajectories.jsonl";
}
fs::path metrics_path(const fs::path& out) {
  return out / "metrics.jsonl";
}

StatusOr<OrderedJson> run_stage(const std::string& stage, const StageContext& context) {
  if (context.train.empty()) return invalid_argument("no training tasks");
  if (stage == "warmup") return run_warmup(context);
  if (stage == "collect") return run_collect(context);
  if (stage == "rft") return run_rft(context);
  if (stage == "value") return run_value(context);
  if (stage == "ppo") return run_ppo(context);
  return invalid_argument("unknown stage '" + stage + "': use warmup, collect, rft, value, ppo or all");
}

uint64_t derive_seed(uint64_t seed, const std::string& stage, uint64_t iteration) {
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  uint64_t h = mix(seed);
  for (char ch : stage) h = mix(h ^ static_cast<unsigned char>(ch));
  return mix(h ^ iteration);
}

}  // namespace kforge::rl
