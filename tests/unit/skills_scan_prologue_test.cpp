// scan_prologue: where it is legal, the kernel it leads to (the chain evaluated where the scan reads,
// never stored) for row scans, chunked row scans and column scans, and nvcc builds. The numerics
// against torch: on the GPU machine (level1/93 masked_cumsum in the bench).
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "skills/planner.h"
#include "skills/scan_prologue.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// x [rows, cols] * mask (bool) -> m -> cumsum(dim) -> y; `m_returned` returns m too.
std::string masked_cumsum(int64_t rows, int64_t cols, int dim, bool m_returned = false) {
  const std::string shape = "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
  return R"({"format": "kforge.graph/1", "name": "masked_cumsum",
    "inputs": [{"id": "x", "name": "x", "shape": )" +
         shape + R"(, "dtype": "float32"},
               {"id": "mask", "name": "mask", "shape": )" +
         shape + R"(, "dtype": "bool"}],
    "params": [],
    "nodes": [
      {"id": "m", "op": "mul", "inputs": ["x", "mask"], "attrs": {"scalar": null}, "shape": )" +
         shape + R"(, "dtype": "float32"},
      {"id": "y", "op": "cumsum", "inputs": ["m"], "attrs": {"dim": )" +
         std::to_string(dim) + R"(}, "shape": )" + shape + R"(, "dtype": "float32"}],
    "outputs": ["y")" +
         (m_returned ? R"(, "m")" : "") + "]}";
}

schedule::Schedule planned(const ir::Graph& g) {
  auto s = plan_default(g);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.value();
}

TEST(ScanPrologue, SitesAndLegality) {
  ir::Graph g = graph_from_text(masked_cumsum(8, 1000, 1));
  auto first = schedule::plan_one_kernel_per_op(g, {});
  auto sites = scan_prologue_sites(g, first);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{0, 1}));
  auto s = scan_prologue(g, first, sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_TRUE(is_scan_prologue(g, s->kernels[0]));
  // The chain's result is a graph output: it must be stored, so no site.
  ir::Graph kept = graph_from_text(masked_cumsum(8, 1000, 1, true));
  EXPECT_TRUE(scan_prologue_sites(kept, schedule::plan_one_kernel_per_op(kept, {})).empty());
  auto bad = scan_prologue(kept, schedule::plan_one_kernel_per_op(kept, {}), Site{{0, 1}, {}, ""});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(has(bad.status().message(), "graph output")) << bad.status().message();
}

TEST(ScanPrologue, EveryScanShapeReadsThroughTheChainAndBuilds) {
  // Rows (one block scan per row), short rows (one warp per row), few long rows (chunked: totals, carries,
  // scans), columns.
  for (auto [rows, cols, dim, tag] : {std::tuple<int64_t, int64_t, int, const char*>{64, 3000, 1, "rows"},
                                      {4096, 100, 1, "warp rows"},
                                      {2, 200000, 1, "chunked"},
                                      {3000, 64, 0, "columns"}}) {
    ir::Graph g = graph_from_text(masked_cumsum(rows, cols, dim));
    const auto s = planned(g);
    ASSERT_EQ(s.kernels.size(), 1u) << tag;
    auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# ref\n"});
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    const std::string& code = p->kernels[0].code;
    EXPECT_TRUE(has(code,
                    "__device__ __forceinline__ float k1_cumsum_prologue(long long i, const float* "
                    "__restrict__ in0, const bool* __restrict__ in1)"))
        << tag << "\n"
        << code;
    EXPECT_TRUE(has(code, "k1_cumsum_prologue(")) << tag;
    // The product m is never stored: the kernel's parameters are x, mask and the output.
    EXPECT_EQ(p->buffers.slots[static_cast<size_t>(g.find("m"))].storage, codegen::Storage::kRegister) << tag;
    if (std::string(tag) == "rows" || std::string(tag) == "chunked") {
      EXPECT_TRUE(has(code, "k1_cumsum_Exchange(tmp.exchange).StripedToBlocked(raw);")) << tag << "\n" << code;
    }
    kforge::testing::expect_builds_with_nvcc(p.value(), std::string("scan-prologue-") + tag);
  }
}

}  // namespace
}  // namespace kforge::skills
