// The random, heuristic and search policies and the episode runner, on the cost model.
#include <gtest/gtest.h>

#include "agent/cost_model_evaluator.h"
#include "agent/policy.h"
#include "agent_test_graphs.h"
#include "costmodel/roofline.h"
#include "skills/planner.h"

namespace kforge::agent {
namespace {

using testing::all_test_tasks;
using testing::kChainGraph;
using testing::kGemmGraph;
using testing::task_from;

Environment make_env() {
  return Environment(std::make_shared<CostModelEvaluator>());
}

double mean_reward(Policy& policy, const std::vector<Task>& tasks, int seeds) {
  double sum = 0;
  int n = 0;
  for (const Task& task : tasks) {
    for (int seed = 0; seed < seeds; ++seed) {
      Environment env = make_env();
      auto ep = run_episode(env, policy, task, static_cast<uint64_t>(seed));
      EXPECT_TRUE(ep.is_ok()) << ep.status().message();
      if (!ep.is_ok()) continue;
      sum += ep->reward;
      ++n;
    }
  }
  return n ? sum / n : 0;
}

TEST(AgentPolicy, HeuristicBeatsRandomOnAverage) {
  auto tasks = all_test_tasks();
  auto random = make_random_policy();
  auto heuristic = make_heuristic_policy();
  const double r_random = mean_reward(*random, tasks, 8);
  const double r_heuristic = mean_reward(*heuristic, tasks, 1);
  EXPECT_GE(r_heuristic, r_random);
  EXPECT_GT(r_heuristic, 1.0) << "every test graph has a predicted gain to find";
}

TEST(AgentPolicy, HeuristicMatchesTheDefaultPlanner) {
  for (const Task& task : all_test_tasks()) {
    auto heuristic = make_heuristic_policy();
    Environment env = make_env();
    auto ep = run_episode(env, *heuristic, task, 0);
    ASSERT_TRUE(ep.is_ok()) << ep.status().message();
    skills::DefaultPlanOptions plan;
    plan.base.tolerance = protocol_tolerance(task.protocol).value();
    auto planned = skills::plan_default(task.graph, plan);
    ASSERT_TRUE(planned.is_ok());
    const double t_planner = costmodel::program_cost(task.graph, planned.value()).seconds;
    const double t_heuristic = costmodel::program_cost(task.graph, ep->best).seconds;
    EXPECT_LE(t_heuristic, t_planner * (1 + 1e-12)) << task.name << " " << task.protocol;
    // Including what the cost model cannot see (cuDNN's engine): the same skills, as many times.
    EXPECT_EQ(ep->best.applied.size(), planned->applied.size()) << task.name << " " << task.protocol;
  }
}

TEST(AgentPolicy, EpisodeRecordsTransitions) {
  auto heuristic = make_heuristic_policy();
  Environment env = make_env();
  Task task = task_from(kGemmGraph);
  auto ep = run_episode(env, *heuristic, task, 7);
  ASSERT_TRUE(ep.is_ok()) << ep.status().message();
  EXPECT_EQ(ep->task, "gemm_epilogue");
  EXPECT_EQ(ep->policy, "heuristic");
  ASSERT_EQ(static_cast<int>(ep->transitions.size()), ep->turns);
  ASSERT_GE(ep->turns, 2);
  EXPECT_EQ(ep->transitions.front().action_name.rfind("fuse_elementwise: ", 0), 0u)
      << "fusion before precision: " << ep->transitions.front().action_name;
  for (size_t i = 0; i < ep->transitions.size(); ++i) {
    const Transition& t = ep->transitions[i];
    EXPECT_FALSE(t.state_features.empty());
    EXPECT_LT(t.action, static_cast<int>(t.action_features.size()));
    EXPECT_EQ(t.outcome, "ok");
    const bool last = i + 1 == ep->transitions.size();
    EXPECT_EQ(t.done, last);
    EXPECT_EQ(t.reward, last ? ep->reward : 0.0);
  }
  EXPECT_EQ(ep->reward, 3.0);
  EXPECT_TRUE(ep->faster_than_compile);
  EXPECT_TRUE(ep->predicted);
  int skill_turns = 0;
  for (const auto& t : ep->transitions) skill_turns += t.action_name != "stop";
  EXPECT_EQ(ep->evaluations, 1 + skill_turns) << "the first schedule plus one per skill turn (stop evaluates nothing)";
  EXPECT_EQ(ep->best.precision, "tf32");
}

TEST(AgentPolicy, SearchFindsTheBestAndCountsItsLookAhead) {
  auto search = make_search_policy(2, 2);
  Environment env = make_env();
  auto ep = run_episode(env, *search, task_from(kGemmGraph), 0);
  ASSERT_TRUE(ep.is_ok()) << ep.status().message();
  EXPECT_EQ(ep->policy, "search");
  EXPECT_EQ(ep->reward, 3.0);
  EXPECT_GT(ep->evaluations, env.evaluations()) << "look-ahead evaluations count";
  auto heuristic = make_heuristic_policy();
  Environment env2 = make_env();
  auto h = run_episode(env2, *heuristic, task_from(kGemmGraph), 0);
  ASSERT_TRUE(h.is_ok());
  Task task = task_from(kGemmGraph);
  EXPECT_LE(costmodel::program_cost(task.graph, ep->best).seconds,
            costmodel::program_cost(task.graph, h->best).seconds * (1 + 1e-12));
}

TEST(AgentPolicy, ExhaustiveIsAtLeastTheHeuristicAndCountsItsEvaluations) {
  for (const Task& task : all_test_tasks()) {
    auto exhaustive = make_exhaustive_policy();
    Environment env = make_env();
    auto ep = run_episode(env, *exhaustive, task, 0);
    ASSERT_TRUE(ep.is_ok()) << ep.status().message();
    EXPECT_EQ(ep->policy, "exhaustive") << "these graphs have far fewer than 4096 schedules";
    auto heuristic = make_heuristic_policy();
    Environment env2 = make_env();
    auto h = run_episode(env2, *heuristic, task, 0);
    ASSERT_TRUE(h.is_ok());
    if (h->evaluations > 1) {  // a site that applies
      EXPECT_GT(ep->evaluations, env.evaluations()) << task.name << ": look-ahead evaluations count";
    }
    EXPECT_LE(costmodel::program_cost(task.graph, ep->best).seconds,
              costmodel::program_cost(task.graph, h->best).seconds * (1 + 1e-12))
        << task.name << " " << task.protocol;
    EXPECT_GE(ep->reward, h->reward) << task.name << " " << task.protocol;
  }
  // A cap smaller than the schedules reachable cuts the search short, and the name says so.
  auto capped = make_exhaustive_policy(1);
  Environment env = make_env();
  auto ep = run_episode(env, *capped, task_from(kChainGraph), 0);
  ASSERT_TRUE(ep.is_ok()) << ep.status().message();
  EXPECT_EQ(ep->policy, "exhaustive (capped at 1 states)");
}

// Counts the evaluations it forwards.
class CountingEvaluator : public Evaluator {
 public:
  std::string name() const override { return "counting cost model"; }
  StatusOr<Evaluation> evaluate(const Task& task, const schedule::Schedule& s) override {
    ++calls;
    return inner.evaluate(task, s);
  }
  CostModelEvaluator inner;
  int calls = 0;
};

TEST(AgentPolicy, PlannedReachesWhatItsInnerPolicyFindsWithTwoEvaluations) {
  // Planned on the cost model and judged by (a counted copy of) the same model: the heuristic's best
  // candidate, judged only at the first schedule and at the plan's end.
  for (const Task& task : all_test_tasks()) {
    auto heuristic = make_heuristic_policy();
    Environment live = make_env();
    auto h = run_episode(live, *heuristic, task, 0);
    ASSERT_TRUE(h.is_ok());
    auto planned = make_planned_policy(make_heuristic_policy(), std::make_shared<CostModelEvaluator>());
    EXPECT_EQ(planned->name(), "heuristic (planned)");
    auto judge = std::make_shared<CountingEvaluator>();
    Environment env(judge);
    auto p = run_episode(env, *planned, task, 0);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    EXPECT_EQ(schedule_state_key(task.graph, p->best), schedule_state_key(task.graph, h->best)) << task.name;
    EXPECT_EQ(p->reward, h->reward) << task.name;
    const bool moved = !h->best.applied.empty();
    EXPECT_EQ(judge->calls, moved ? 2 : 1) << task.name;
    EXPECT_EQ(p->evaluations, judge->calls);
  }
}

// Counts the choices of the policy it wraps (planning and refining alike).
class CountingPolicy : public Policy {
 public:
  CountingPolicy(std::unique_ptr<Policy> inner, int* choices) : inner_(std::move(inner)), choices_(choices) {}
  std::string name() const override { return "counting " + inner_->name(); }
  int choose(const Environment& env, std::mt19937_64& rng) override {
    ++*choices_;
    return inner_->choose(env, rng);
  }

 private:
  std::unique_ptr<Policy> inner_;
  int* choices_;
};

TEST(AgentPolicy, RefinedGoesOnFromThePlansEndWithMeasuredTurns) {
  // The random policy's plan is cut at its best candidate, usually before its end: refined, the
  // policy then chooses again from there, each turn measured; planned, it stops.
  int asked_again = 0;
  for (const Task& task : all_test_tasks()) {
    for (uint64_t seed = 0; seed < 4; ++seed) {
      int planned_choices = 0, refined_choices = 0;
      auto planned = make_planned_policy(std::make_unique<CountingPolicy>(make_random_policy(), &planned_choices),
                                         std::make_shared<CostModelEvaluator>());
      auto refined = make_planned_policy(std::make_unique<CountingPolicy>(make_random_policy(), &refined_choices),
                                         std::make_shared<CostModelEvaluator>(), /*refine=*/true);
      EXPECT_EQ(refined->name(), "counting random (planned, refined)");
      auto judge_a = std::make_shared<CountingEvaluator>();
      auto judge_b = std::make_shared<CountingEvaluator>();
      Environment a(judge_a), b(judge_b);
      auto pa = run_episode(a, *planned, task, seed);
      auto pb = run_episode(b, *refined, task, seed);
      ASSERT_TRUE(pa.is_ok() && pb.is_ok());
      EXPECT_LE(judge_a->calls, 2) << task.name;
      EXPECT_GE(judge_b->calls, judge_a->calls) << task.name;
      EXPECT_EQ(pb->evaluations, judge_b->calls);
      if (refined_choices > planned_choices) {
        ++asked_again;
        // Every turn after the plan was measured: more evaluations than the plan's two.
        if (pb->turns > pa->turns) EXPECT_GT(judge_b->calls, judge_a->calls) << task.name;
      }
    }
  }
  EXPECT_GT(asked_again, 0);
}

TEST(AgentPolicy, RandomIsSeededAndLegal) {
  auto random = make_random_policy();
  std::vector<std::string> first;
  for (int run = 0; run < 2; ++run) {
    Environment env = make_env();
    auto ep = run_episode(env, *random, task_from(kGemmGraph), 42);
    ASSERT_TRUE(ep.is_ok()) << ep.status().message();
    std::vector<std::string> names;
    for (const auto& t : ep->transitions) names.push_back(t.action_name);
    if (run == 0)
      first = names;
    else
      EXPECT_EQ(names, first) << "same seed, same episode";
    EXPECT_GE(ep->reward, 1.0);
  }
}

}  // namespace
}  // namespace kforge::agent
