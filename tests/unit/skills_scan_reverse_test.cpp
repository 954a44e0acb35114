// scan_reverse: flip, scan, flip along one dim as one reverse scan kernel: where it is legal, the
// mirrored reads and writes it emits for row, chunked-row and column scans, and nvcc builds. The
// numerics against torch: on the GPU machine (level1/91 cumsum_reverse in the bench).
#include <gtest/gtest.h>

#include "codegen/program.h"
#include "skills/planner.h"
#include "skills/scan_reverse.h"
#include "test_util.h"

namespace kforge::skills {
namespace {

using kforge::testing::graph_from_text;

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

// x [rows, cols] -> flip(flip_dim) -> f -> cumsum(dim) -> c -> flip(back_dim) -> y; `f_returned`
// returns f too.
std::string reverse_cumsum(int64_t rows, int64_t cols, int dim, int flip_dim, int back_dim, bool f_returned = false) {
  const std::string shape = "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
  auto node = [&](const std::string& id, const std::string& op, const std::string& in, const std::string& attrs) {
    return R"({"id": ")" + id + R"(", "op": ")" + op + R"(", "inputs": [")" + in + R"("], "attrs": )" + attrs +
           R"(, "shape": )" + shape + R"(, "dtype": "float32"})";
  };
  return R"({"format": "kforge.graph/1", "name": "reverse_cumsum",
    "inputs": [{"id": "x", "name": "x", "shape": )" +
         shape + R"(, "dtype": "float32"}], "params": [], "nodes": [)" +
         node("f", "flip", "x", R"({"dims": [)" + std::to_string(flip_dim) + "]}") + ", " +
         node("c", "cumsum", "f", R"({"dim": )" + std::to_string(dim) + "}") + ", " +
         node("y", "flip", "c", R"({"dims": [)" + std::to_string(back_dim) + "]}") + R"(], "outputs": ["y")" +
         (f_returned ? R"(, "f")" : "") + "]}";
}

TEST(ScanReverse, SitesAndLegality) {
  ir::Graph g = graph_from_text(reverse_cumsum(8, 1000, 1, 1, 1));
  auto first = schedule::plan_one_kernel_per_op(g, {});
  auto sites = scan_reverse_sites(g, first);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].kernels, (std::vector<int>{0, 1, 2}));
  auto s = scan_reverse(g, first, sites[0]);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_TRUE(is_scan_reverse(g, s->kernels[0]));
  EXPECT_TRUE(scan_reverse_sites(g, s.value()).empty());
  // A flip along another dim, a flip back along another dim, a flipped input also returned: no site.
  for (const auto& text :
       {reverse_cumsum(8, 1000, 1, 0, 1), reverse_cumsum(8, 1000, 1, 1, 0), reverse_cumsum(8, 1000, 1, 1, 1, true)}) {
    ir::Graph other = graph_from_text(text);
    EXPECT_TRUE(scan_reverse_sites(other, schedule::plan_one_kernel_per_op(other, {})).empty());
  }
  ir::Graph kept = graph_from_text(reverse_cumsum(8, 1000, 1, 1, 1, true));
  EXPECT_FALSE(scan_reverse(kept, schedule::plan_one_kernel_per_op(kept, {}), Site{{0, 1, 2}, {}, ""}).is_ok());
}

TEST(ScanReverse, MirroredReadsAndWritesForEveryScanShapeAndItBuilds) {
  for (auto [rows, cols, dim, tag, read, write] :
       {std::tuple<int64_t, int64_t, int, const char*, const char*, const char*>{
            64, 3000, 1, "rows", "in[xb + (2999LL - j)]", "y[(2999LL - j)] = o[k];"},
        {2, 200000, 1, "chunked", "in[xb + (199999LL - j)]", "y[(199999LL - j)] = o[k];"},
        {3000, 64, 0, "columns", "in[base + (2999LL - l) * 64LL]", "out[obase + (2999LL - l) * 64LL] ="}}) {
    ir::Graph g = graph_from_text(reverse_cumsum(rows, cols, dim, dim, dim));
    auto s = plan_default(g);
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    ASSERT_EQ(s->kernels.size(), 1u) << tag;
    auto p = codegen::emit_program(g, s.value(), {.library_file = "lib.so", .reference_source = "# ref\n"});
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    const std::string& code = p->kernels[0].code;
    EXPECT_TRUE(has(code, read)) << tag << "\n" << code;
    EXPECT_TRUE(has(code, write)) << tag << "\n" << code;
    EXPECT_TRUE(has(code, "// reverse cumsum over")) << tag;
    // Neither flipped tensor is stored.
    for (const char* v : {"f", "c"})
      EXPECT_EQ(p->buffers.slots[static_cast<size_t>(g.find(v))].storage, codegen::Storage::kRegister) << tag << v;
    kforge::testing::expect_builds_with_nvcc(p.value(), std::string("scan-reverse-") + tag);
  }
}

}  // namespace
}  // namespace kforge::skills
