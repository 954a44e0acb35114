// pair_sites asks only the pairs along the graph's edges: for every skill, the two-kernel sites it lists are
// exactly the pairs its apply accepts, on graphs with shared results, diamonds, graph outputs and library kernels.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "codegen_test_graphs.h"
#include "schedule/planner.h"
#include "skills/skill.h"

namespace kforge::skills {
namespace {

using codegen::testing::make_graph;
using Pair = std::pair<int, int>;

std::vector<ir::Graph> graphs() {
  std::vector<ir::Graph> out;
  // A linear with a pointwise epilogue whose intermediate is read twice (a diamond), then a row sum.
  out.push_back(make_graph({{"x", {8, 16}}, {"w", {32, 16}}, {"b", {32}}},
                           {{"linear", {"x", "w", "b"}},
                            {"relu", {"v0"}},
                            {"mul", {"v1", "v1"}},
                            {"add", {"v2", "v1"}},
                            {"exp", {"v3"}},
                            {"sum", {"v4"}, R"({"dims": [1]})"},
                            {"cumsum", {"v3"}, R"({"dim": 1})"}},
                           {"v5", "v6"}));
  // A pointwise chain whose middle result is also a graph output, then a softmax and a loss.
  out.push_back(make_graph({{"x", {4, 10}}, {"t", {4, 10}}},
                           {{"sigmoid", {"x"}},
                            {"tanh", {"v0"}},
                            {"neg", {"v1"}},
                            {"softmax", {"v2"}, R"({"dim": 1})"},
                            {"abs", {"v3"}},
                            {"mse_loss", {"v4", "t"}}},
                           {"v1", "v5"}));
  return out;
}

std::set<Pair> listed_pairs(const std::vector<Site>& sites) {
  std::set<Pair> out;
  for (const auto& site : sites) {
    if (site.kernels.size() == 2) out.insert({site.kernels[0], site.kernels[1]});
  }
  return out;
}

TEST(PairSites, ListedPairsAreExactlyThePairsApplyAccepts) {
  size_t legal_seen = 0;
  for (const ir::Graph& g : graphs()) {
    std::vector<schedule::Schedule> schedules = {schedule::plan_one_kernel_per_op(g)};
    // Also a schedule with multi-node kernels: each skill's first site applied once.
    schedule::Schedule grown = schedules.front();
    for (const auto& skill : all_skills()) {
      auto sites = skill.sites(g, grown);
      if (sites.empty()) continue;
      if (auto next = skill.apply(g, grown, sites.front()); next.is_ok()) grown = std::move(next).value();
    }
    schedules.push_back(grown);
    for (const auto& s : schedules) {
      const int n = static_cast<int>(s.kernels.size());
      for (const auto& skill : all_skills()) {
        const std::set<Pair> listed = listed_pairs(skill.sites(g, s));
        std::set<Pair> accepted;
        for (int c = 0; c < n; ++c) {
          for (int p = 0; p < c; ++p) {
            Site site;
            site.kernels = {p, c};
            if (skill.apply(g, s, site).is_ok()) accepted.insert({p, c});
          }
        }
        EXPECT_EQ(listed, accepted) << skill.name << " on " << n << " kernels";
        legal_seen += accepted.size();
      }
    }
  }
  EXPECT_GT(legal_seen, 3u);  // the graphs do have joinable pairs
}

}  // namespace
}  // namespace kforge::skills
