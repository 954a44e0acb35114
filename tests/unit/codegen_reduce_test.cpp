// Reduction-like codegen (reduce, argreduce, softmax, norm, scan, loss, triplet loss): layouts,
// the kernel shape each case gets, the essential emitted structure, and nvcc builds.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "codegen/reduce_common.h"
#include "sandbox/build.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge::codegen {
namespace {

using kforge::testing::graph_from_text;
using kforge::testing::one_node_graph;

struct In {
  std::string id;
  ir::Shape shape;
  std::string dtype = "float32";
};

struct NodeSpec {
  std::string op;
  std::vector<std::string> inputs;  // "" for an absent optional input
  std::string attrs;
  ir::Shape shape;
  std::string dtype = "float32";
};

// A graph of several nodes over shared inputs, every node an output.
std::string graph_json(const std::vector<In>& ins, const std::vector<NodeSpec>& nodes) {
  Json g;
  g["format"] = "kforge.graph/1";
  g["name"] = "t_reduce";
  g["inputs"] = Json::array();
  for (const auto& in : ins)
    g["inputs"].push_back({{"id", in.id}, {"name", in.id}, {"shape", in.shape}, {"dtype", in.dtype}});
  g["params"] = Json::array();
  g["nodes"] = Json::array();
  g["outputs"] = Json::array();
  for (size_t k = 0; k < nodes.size(); ++k) {
    Json inputs = Json::array();
    for (const auto& i : nodes[k].inputs) inputs.push_back(i.empty() ? Json() : Json(i));
    std::string id = "v" + std::to_string(k);
    g["nodes"].push_back({{"id", id},
                          {"op", nodes[k].op},
                          {"inputs", inputs},
                          {"attrs", Json::parse(nodes[k].attrs)},
                          {"shape", nodes[k].shape},
                          {"dtype", nodes[k].dtype}});
    g["outputs"].push_back(id);
  }
  return g.dump();
}

Program emit(const ir::Graph& g) {
  auto s = schedule::plan_one_kernel_per_op(g);
  auto p = emit_program(g, s, {.library_file = "lib.so", .reference_source = "# reference\n"});
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return std::move(p).value();
}

Program emit_one(const std::string& op, const std::vector<In>& ins, const std::string& attrs, const ir::Shape& out,
                 const std::string& out_dtype = "float32") {
  std::vector<std::string> ids;
  for (const auto& i : ins) ids.push_back(i.id);
  return emit(graph_from_text(graph_json(ins, {{op, ids, attrs, out, out_dtype}})));
}

bool has(const std::string& code, const std::string& what) {
  return code.find(what) != std::string::npos;
}

void expect_builds(const Program& p, const std::string& name) {
  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto dir = kforge::testing::temp_dir(name);
  auto r =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  std::string logs;
  for (const auto& c : r->compiles) {
    if (!c.ok) logs += c.file + ":\n" + c.log + "\n";
  }
  EXPECT_TRUE(r->ok) << r->message << "\n" << logs;
  for (const auto& c : r->compiles) {
    for (const auto& ru : c.resources) EXPECT_EQ(ru.spill_stores, 0) << c.file << " " << ru.kernel << " spills";
  }
  std::filesystem::remove_all(dir);
}

// ---- layouts ----

TEST(CodegenReduceLayout, CoalescesAndClassifies) {
  auto inner = reduce::make_layout({8, 33, 1000}, {2});
  EXPECT_TRUE(inner.rows);
  EXPECT_TRUE(inner.contiguous_rows());
  EXPECT_EQ(inner.M, 264);
  EXPECT_EQ(inner.N, 1000);
  ASSERT_EQ(inner.kept_sizes.size(), 1u);  // 8 and 33 merge
  EXPECT_EQ(inner.kept_strides[0], 1000);

  auto mid = reduce::make_layout({128, 4096, 4095}, {1});
  EXPECT_FALSE(mid.rows);
  EXPECT_EQ(mid.M, 128 * 4095);
  EXPECT_EQ(mid.N, 4096);
  EXPECT_EQ(mid.red_strides, std::vector<int64_t>{4095});

  auto bn = reduce::make_layout({16, 32, 40, 40}, {0, 2, 3});
  EXPECT_TRUE(bn.rows);
  EXPECT_FALSE(bn.contiguous_rows());
  EXPECT_EQ(bn.red_sizes, (std::vector<int64_t>{16, 1600}));
  EXPECT_EQ(bn.red_strides, (std::vector<int64_t>{51200, 1}));
  EXPECT_EQ(bn.kept_strides, std::vector<int64_t>{1600});

  auto ones = reduce::make_layout({1, 5, 1}, {0, 2});  // reduced dims of size 1 vanish
  EXPECT_FALSE(ones.rows);
  EXPECT_EQ(ones.M, 5);
  EXPECT_EQ(ones.N, 1);

  auto all = reduce::make_layout({3, 4}, {0, 1});
  EXPECT_TRUE(all.rows);
  EXPECT_EQ(all.M, 1);
  EXPECT_EQ(all.N, 12);
}

TEST(CodegenReduceLayout, IndexFunctions) {
  std::string f = reduce::index_fn("f", {16, 1600}, {51200, 1}, 25600);
  EXPECT_TRUE(has(f, "unsigned int u = (unsigned int)i;")) << f;
  EXPECT_TRUE(has(f, "u % 1600u")) << f;
  EXPECT_TRUE(has(f, "(long long)u * 51200LL")) << f;
  EXPECT_TRUE(has(reduce::index_fn("g", {}, {}, 1), "return 0;"));
  EXPECT_TRUE(has(reduce::index_fn("h", {7}, {3}, 7), "return i * 3LL;"));
  EXPECT_TRUE(has(reduce::index_fn("k", {70000, 70000}, {70000, 1}, 4900000000LL), "long long u = i;"));
}

// ---- reduce / argreduce ----

TEST(CodegenReduceEmit, SumOverMiddleDimIsColumns) {
  Program p = emit_one("sum", {{"x", {128, 4096, 4095}}}, R"({"dims": [1], "keepdim": true})", {128, 1, 4095});
  ASSERT_EQ(p.kernels.size(), 1u);
  const auto& k = p.kernels[0];
  EXPECT_EQ(k.name, "k0_sum");
  EXPECT_TRUE(has(k.code, "extern \"C\" int k0_sum(KfContext* ctx, void* const* bufs)"));
  EXPECT_TRUE(has(k.code, "k0_sum_r_cols<<<"));
  EXPECT_TRUE(has(k.code, "u % 4095u"));
  EXPECT_TRUE(has(k.code, "double s;"));  // fp32 sums accumulate in double
  EXPECT_TRUE(has(k.code, "ctx->stream"));
  EXPECT_EQ(k.launches, 1);
  EXPECT_EQ(k.workspace_bytes, 0u);
}

TEST(CodegenReduceEmit, FullReductionSplitsDeterministically) {
  Program p = emit_one("sum", {{"x", {4096, 4096}}}, R"({"dims": []})", {});
  const auto& k = p.kernels[0];
  EXPECT_TRUE(has(k.code, "k0_sum_r_rows<true><<<")) << k.code;  // float4 loads when aligned
  EXPECT_TRUE(has(k.code, "k0_sum_r_rows<false><<<"));
  EXPECT_TRUE(has(k.code, "k0_sum_r_fin<<<1, 256"));
  EXPECT_TRUE(has(k.code, "ctx->workspace_bytes <"));
  EXPECT_EQ(k.launches, 2);
  EXPECT_GT(k.workspace_bytes, 0u);
  EXPECT_GE(p.buffers.workspace_bytes, k.workspace_bytes);
}

TEST(CodegenReduceEmit, ShortRowsGetAWarpEach) {
  Program p = emit_one("logsumexp", {{"x", {8, 33, 1000}}}, R"({"dims": [2]})", {8, 33});
  EXPECT_TRUE(has(p.kernels[0].code, "k0_logsumexp_r_warps<<<"));
  EXPECT_TRUE(has(p.kernels[0].code, "log(a.s)"));
}

TEST(CodegenReduceEmit, RowsOfAtMostSixteenShareAWarp) {
  // 16 per row: two rows per warp; 5 per row: groups of 8 lanes, four rows per warp; 17: a warp per row.
  Program p16 = emit_one("amax", {{"x", {4096, 16}}}, R"({"dims": [1]})", {4096});
  EXPECT_TRUE(has(p16.kernels[0].code, "kf_group_merge<16>(a);")) << p16.kernels[0].code;
  EXPECT_TRUE(has(p16.kernels[0].code, "const long long o = w * 2LL + slot;"));
  EXPECT_TRUE(has(p16.kernels[0].code, "k0_amax_r_groups<<<256, 256"));  // 2048 warp steps, 8 warps a block
  Program p5 = emit_one("argmax", {{"x", {1000, 7, 5}}}, R"({"dim": 2})", {1000, 7}, "int64");
  EXPECT_TRUE(has(p5.kernels[0].code, "kf_group_merge<8>(a);")) << p5.kernels[0].code;
  EXPECT_TRUE(has(p5.kernels[0].code, "const bool live = o < 7000LL;"));
  Program p17 = emit_one("sum", {{"x", {64, 17}}}, R"({"dims": [1]})", {64});
  EXPECT_TRUE(has(p17.kernels[0].code, "k0_sum_r_warps<<<")) << p17.kernels[0].code;
  EXPECT_FALSE(has(p17.kernels[0].code, "_groups<<<"));
}

TEST(CodegenReduceEmit, VarUsesShiftedDoubleSums) {
  Program p = emit_one("var", {{"x", {8, 33, 1000}}}, R"({"dims": [0, 2], "correction": 0})", {33});
  const auto& code = p.kernels[0].code;
  EXPECT_TRUE(has(code, "double k, s1, s2;"));
  EXPECT_TRUE(has(code, "a.k = (double)k0_var_r_LOAD(base);"));
  EXPECT_TRUE(has(code, "/ (8000.0)"));  // correction 0: divide by N
}

TEST(CodegenReduceEmit, NormKinds) {
  for (auto [p, expect] : std::vector<std::pair<std::string, std::string>>{
           {"2.0", "sqrt(a.s)"}, {"1.0", "fabsf(x)"}, {"0.0", "? 1.0 : 0.0"}, {"3.0", "powf(fabsf(x), (3.0f))"}}) {
    Program prog = emit_one("norm", {{"x", {64, 100}}}, R"({"dims": [1], "p": )" + p + "}", {64});
    EXPECT_TRUE(has(prog.kernels[0].code, expect)) << p << "\n" << prog.kernels[0].code;
  }
}

// p = +-inf cannot be written in graph JSON (float attrs are numbers): build the node directly.
TEST(CodegenReduceEmit, InfinityNorms) {
  for (double p : {INFINITY, -INFINITY}) {
    ir::Graph g;
    g.name = "t_inf";
    auto x = g.add_input("x", "x", {{8, 100}, ir::DType::kFloat32}, Json::object());
    ir::Node n;
    n.op = ir::OpId::kNorm;
    n.inputs = {x};
    n.attrs.set("dims", std::vector<int64_t>{1});
    n.attrs.set("keepdim", false);
    n.attrs.set("p", p);
    g.set_outputs({g.add_node("y", n, {{8}, ir::DType::kFloat32})});
    ASSERT_TRUE(ir::validate(g).is_ok());
    Program prog = emit(g);
    EXPECT_TRUE(has(prog.kernels[0].code,
                    p > 0 ? "if (ax > m || kf_isnan(ax)) m = ax;" : "if (ax < m || kf_isnan(ax)) m = ax;"))
        << prog.kernels[0].code;
    EXPECT_TRUE(has(prog.kernels[0].code, p > 0 ? "a.m = 0;" : "a.m = INFINITY;"));
  }
}

TEST(CodegenReduceEmit, IntegerSumWidensAndWraps) {
  Program p = emit_one("sum", {{"x", {16, 50}, "int32"}}, R"({"dims": [1]})", {16}, "int64");
  EXPECT_TRUE(has(p.kernels[0].code, "unsigned long long s;"));
  EXPECT_TRUE(has(p.kernels[0].code, "out[o] = (int64_t)(a.s);"));
}

TEST(CodegenReduceEmit, ArgmaxKeepsFirstIndexAndNan) {
  Program p = emit_one("argmax", {{"x", {128, 4096, 4095}}}, R"({"dim": 1})", {128, 4095}, "int64");
  const auto& code = p.kernels[0].code;
  EXPECT_TRUE(has(code, "kf_isnan(v) ? (kf_isnan(y) && k < i)"));
  EXPECT_TRUE(has(code, "(y == v && k < i)"));
  EXPECT_TRUE(has(code, "int64_t* __restrict__ out"));
  Program flat = emit_one("argmin", {{"x", {5, 7}}}, R"({"dim": null, "keepdim": true})", {1, 1}, "int64");
  EXPECT_TRUE(has(flat.kernels[0].code, "y < v"));
}

TEST(CodegenReduceEmit, EmptyOutputsAndEmptyReductions) {
  Program none = emit_one("sum", {{"x", {0, 5}}}, R"({"dims": [1]})", {0});
  EXPECT_EQ(none.kernels[0].launches, 0);
  EXPECT_FALSE(has(none.kernels[0].code, "<<<"));
  Program empty = emit_one("prod", {{"x", {4, 0}}}, R"({"dims": [1]})", {4});
  EXPECT_TRUE(has(empty.kernels[0].code, "a.s = 1;"));
  auto g = graph_from_text(one_node_graph("amax", {{"x", {4, 0}}}, R"({"dims": [1]})", {4}));
  auto s = schedule::plan_one_kernel_per_op(g);
  EXPECT_FALSE(emit_program(g, s, {}).is_ok());
}

// ---- softmax ----

TEST(CodegenReduceEmit, LogSumExpAddsFourLanesWithOneRescale) {
  // Long float rows: the 16-byte path adds each vector with add4 (one exp per lane, one rescale for
  // the vector's maximum); float64 keeps the per-element add.
  Program p = emit_one("logsumexp", {{"x", {64, 4096}}}, R"({"dims": [1]})", {64});
  const std::string& c = p.kernels[0].code;
  EXPECT_TRUE(has(c, "void add4(float x0, float x1, float x2, float x3)")) << c;
  EXPECT_TRUE(has(c, "a.add4(v0, v1, v2, v3);")) << c;
  EXPECT_TRUE(has(c, "s = m == -INFINITY ? 0.0 : s * (double)expf(m - b);")) << c;
  Program d = emit_one("logsumexp", {{"x", {64, 4096}, "float64"}}, R"({"dims": [1]})", {64}, "float64");
  EXPECT_FALSE(has(d.kernels[0].code, "add4")) << d.kernels[0].code;
  // Sums add a vector's four lanes in float, then once in double.
  Program s = emit_one("sum", {{"x", {64, 4096}}}, R"({"dims": [1], "keepdim": false})", {64});
  EXPECT_TRUE(has(s.kernels[0].code, "a.s += (double)((v0 + v1) + (v2 + v3));")) << s.kernels[0].code;
}

TEST(CodegenReduceSoftmax, StrategiesByShape) {
  auto code = [](const ir::Shape& s, int dim, const std::string& op = "softmax") {
    return emit_one(op, {{"x", s}}, "{\"dim\": " + std::to_string(dim) + "}", s).kernels[0];
  };
  EXPECT_TRUE(has(code({64, 1000}, 1).code, "warp per row"));
  EXPECT_TRUE(has(code({64, 17}, 1).code, "warp per row"));
  auto classes = code({1000, 10}, 1, "log_softmax");  // ten classes: groups of 16 lanes, two rows per warp
  EXPECT_TRUE(has(classes.code, "groups of 16 lanes per row")) << classes.code;
  EXPECT_TRUE(has(classes.code, "a.m = __shfl_sync(0xffffffffu, a.m, 0, 16);"));
  EXPECT_TRUE(has(classes.code, "k0_log_softmax_groups<<<63, 256"));  // 500 warp steps, 8 warps a block
  auto big = code({4096, 393216}, 1, "log_softmax");
  EXPECT_TRUE(has(big.code, "block per row"));
  EXPECT_TRUE(has(big.code, "k0_log_softmax_rows<true>"));
  EXPECT_TRUE(has(big.code, "log(a.s)"));
  EXPECT_TRUE(has(big.code, "a.add4(w3.x, w3.y, w3.z, w3.w);")) << big.code;
  auto split = code({2, 300000}, 1);
  EXPECT_TRUE(has(split.code, "split"));
  EXPECT_EQ(split.launches, 2);
  EXPECT_GT(split.workspace_bytes, 0u);
  EXPECT_TRUE(has(code({4, 100, 7}, 1).code, "columns 32x8"));
  EXPECT_TRUE(has(code({8, 3, 9}, 1).code, "columns 256x1"));
  auto few = code({200000, 3}, 0);
  EXPECT_TRUE(has(few.code, "columns 32x8, split"));
  EXPECT_EQ(few.launches, 2);
}

// ---- norm ----

TEST(CodegenReduceNorm, BatchNormTrainingComputesStatistics) {
  std::vector<In> ins = {{"x", {16, 32, 40, 40}}, {"w", {32}}, {"b", {32}}};
  Program p = emit(graph_from_text(
      graph_json(ins, {{"batch_norm", {"x", "w", "b", "", ""}, R"({"training": true})", {16, 32, 40, 40}}})));
  const auto& k = p.kernels[0];
  EXPECT_TRUE(has(k.code, "k0_batch_norm_st_rows"));
  EXPECT_TRUE(has(k.code, "k0_batch_norm_apply<<<"));
  EXPECT_TRUE(has(k.code, "1.0 / sqrt(var + (1.0000000000000001e-05))"));
  EXPECT_TRUE(has(k.code, "((i / 1600LL) % 32LL)"));
  EXPECT_GT(k.workspace_bytes, 0u);
}

TEST(CodegenReduceNorm, EvalModeUsesRunningStatistics) {
  std::vector<In> ins = {{"x", {4, 8, 5}}, {"rm", {8}}, {"rv", {8}}};
  Program p = emit(graph_from_text(
      graph_json(ins, {{"batch_norm", {"x", "", "", "rm", "rv"}, R"({"training": false})", {4, 8, 5}}})));
  EXPECT_FALSE(has(p.kernels[0].code, "_st_"));
  EXPECT_TRUE(has(p.kernels[0].code, "p4[g]"));
  EXPECT_EQ(p.kernels[0].launches, 1);
}

TEST(CodegenReduceNorm, GroupAndLayerNormGroups) {
  std::vector<In> ins = {{"x", {8, 32, 20, 20}}, {"w", {32}}, {"b", {32}}};
  Program gn = emit(
      graph_from_text(graph_json(ins, {{"group_norm", {"x", "w", "b"}, R"({"num_groups": 4})", {8, 32, 20, 20}}})));
  EXPECT_TRUE(has(gn.kernels[0].code, "(i / 3200LL)"));
  std::vector<In> lins = {{"x", {16, 64, 256, 256}}};
  Program ln = emit(graph_from_text(graph_json(
      lins, {{"layer_norm", {"x", "", ""}, R"({"normalized_shape": [64, 256, 256]})", {16, 64, 256, 256}}})));
  EXPECT_TRUE(has(ln.kernels[0].code, "split"));  // 16 rows of 4M elements: split over blocks
}

TEST(CodegenReduceNorm, NormalizationPassIsVectorizedWhenRunsOfFourShareParameters) {
  // Group norm over 20x20 planes: runs of 400 elements share group and channel: 16-byte tiles, with
  // the scalar kernel for unaligned pointers.
  std::vector<In> ins = {{"x", {8, 32, 20, 20}}, {"w", {32}}, {"b", {32}}};
  Program gn = emit(
      graph_from_text(graph_json(ins, {{"group_norm", {"x", "w", "b"}, R"({"num_groups": 4})", {8, 32, 20, 20}}})));
  const std::string& c = gn.kernels[0].code;
  EXPECT_TRUE(has(c, "k0_group_norm_apply4<<<100u, 256")) << c;  // 102400 / 4 vectors, 256 per block
  EXPECT_TRUE(has(c, "r.w = ((((xv.w - mean) - mean_lo) * rstd) * w) + bb;")) << c;
  EXPECT_TRUE(has(c, "k0_group_norm_apply<<<kf_grid(")) << c;
  // Planes of 5 elements, and layer norm's per-element weight: the scalar pass only.
  std::vector<In> odd = {{"x", {4, 8, 5}}, {"w", {8}}, {"b", {8}}};
  Program bn = emit(
      graph_from_text(graph_json(odd, {{"batch_norm", {"x", "w", "b", "", ""}, R"({"training": true})", {4, 8, 5}}})));
  EXPECT_FALSE(has(bn.kernels[0].code, "_apply4")) << bn.kernels[0].code;
  std::vector<In> lins = {{"x", {16, 64}}, {"w", {64}}, {"b", {64}}};
  Program ln = emit(
      graph_from_text(graph_json(lins, {{"layer_norm", {"x", "w", "b"}, R"({"normalized_shape": [64]})", {16, 64}}})));
  EXPECT_FALSE(has(ln.kernels[0].code, "_apply4")) << ln.kernels[0].code;
}

// ---- scan ----

TEST(CodegenReduceScan, BlockScanAndChunks) {
  Program rows = emit_one("cumsum", {{"x", {32768, 32768}}}, R"({"dim": 1})", {32768, 32768});
  EXPECT_TRUE(has(rows.kernels[0].code, "cub::BlockScan<double, 256"));
  EXPECT_TRUE(has(rows.kernels[0].code, "block scan per row"));
  Program chunked = emit_one("cumsum", {{"x", {3, 1000000}}}, R"({"dim": -1})", {3, 1000000});
  EXPECT_TRUE(has(chunked.kernels[0].code, "chunked block scan"));
  EXPECT_EQ(chunked.kernels[0].launches, 3);
  Program cols = emit_one("cumprod", {{"x", {300, 70}}}, R"({"dim": 0})", {300, 70});
  EXPECT_TRUE(has(cols.kernels[0].code, "one thread per column"));
  EXPECT_TRUE(has(cols.kernels[0].code, "return a * b;"));
  Program warp = emit_one("cumsum", {{"x", {16384, 64}}}, R"({"dim": -1})", {16384, 64});
  EXPECT_TRUE(has(warp.kernels[0].code, "warp scan per row"));
  EXPECT_TRUE(has(warp.kernels[0].code, "const double u = __shfl_up_sync(0xffffffffu, v, d);"));
  EXPECT_TRUE(has(warp.kernels[0].code, "k0_cumsum_warp<<<2048, 256, 0, ctx->stream>>>"));
  EXPECT_FALSE(has(warp.kernels[0].code, "cub::BlockScan"));
  Program few = emit_one("cumsum", {{"x", {200000, 4}}}, R"({"dim": 0})", {200000, 4});
  EXPECT_TRUE(has(few.kernels[0].code, "one thread per column chunk"));
  EXPECT_EQ(few.kernels[0].launches, 3);
}

// ---- losses ----

TEST(CodegenReduceLoss, CrossEntropyTwoStages) {
  std::vector<In> ins = {{"x", {512, 1000}}, {"t", {512}, "int64"}};
  Program p = emit(graph_from_text(graph_json(
      ins,
      {{"cross_entropy", {"x", "t"}, R"({"reduction": "mean", "ignore_index": -1, "label_smoothing": 0.1})", {}}})));
  const auto& code = p.kernels[0].code;
  EXPECT_TRUE(has(code, "if (t == -1LL)"));
  EXPECT_TRUE(has(code, "k0_cross_entropy_b_"));  // the scalar stage
  EXPECT_TRUE(has(code, "a.s / a.c"));            // mean over non-ignored targets
  EXPECT_GT(p.kernels[0].workspace_bytes, 0u);
}

TEST(CodegenReduceLoss, ElementwiseLossesBroadcastAndReduce) {
  Program p = emit_one("mse_loss", {{"a", {1000, 300}}, {"b", {300}}}, R"({"reduction": "mean"})", {});
  EXPECT_TRUE(has(p.kernels[0].code, "in1[((unsigned)((off)) % 300u)]")) << p.kernels[0].code;
  EXPECT_TRUE(has(p.kernels[0].code, "a.s / (300000.0)"));
  Program kl = emit_one("kl_div", {{"a", {64, 500}}, {"b", {64, 500}}}, R"({"reduction": "batchmean"})", {});
  EXPECT_TRUE(has(kl.kernels[0].code, "a.s / (64.0)"));
  // Same-shape float operands: 16-byte loads of both, the element computed from the two lanes, and
  // the vector kernel only when both pointers are aligned; a broadcast operand keeps scalar loads.
  EXPECT_TRUE(has(kl.kernels[0].code, "const float4 u0 = q4[q];")) << kl.kernels[0].code;
  EXPECT_TRUE(has(kl.kernels[0].code, "const float V1 = u0.y; v1 = k0_kl_div_elem(V0, V1); }")) << kl.kernels[0].code;
  EXPECT_TRUE(has(kl.kernels[0].code, "a.s += (double)((v0 + v1) + (v2 + v3));")) << kl.kernels[0].code;
  EXPECT_TRUE(has(kl.kernels[0].code, "& 15) == 0 && (reinterpret_cast<uintptr_t>("));
  EXPECT_FALSE(has(p.kernels[0].code, "q4[")) << p.kernels[0].code;
  Program none =
      emit_one("huber_loss", {{"a", {10, 3}}, {"b", {10, 3}}}, R"({"reduction": "none", "delta": 2.0})", {10, 3});
  EXPECT_TRUE(has(none.kernels[0].code, "k0_huber_loss_none<<<"));
}

TEST(CodegenReduceLoss, TripletMargin) {
  Program p = emit_one("triplet_margin_loss", {{"a", {128, 512}}, {"p", {128, 512}}, {"n", {128, 512}}},
                       R"({"reduction": "mean", "swap": true, "p": 1.0})", {});
  const auto& code = p.kernels[0].code;
  EXPECT_TRUE(has(code, "double f[3];"));
  EXPECT_TRUE(has(code, "v.p - v.n + e"));
  EXPECT_TRUE(has(code, "(9.99999997e-07f)"));
}

// ---- nvcc builds of representative programs ----

TEST(CodegenReduceBuild, ReductionsSoftmaxAndNorms) {
  std::vector<In> ins = {{"x", {8, 33, 1000}}, {"h", {64, 3000}, "float16"}, {"w", {33}}};
  std::vector<NodeSpec> nodes = {
      {"sum", {"x"}, R"({"dims": [1], "keepdim": true})", {8, 1, 1000}},
      {"var", {"x"}, R"({"dims": [], "correction": 1})", {}},
      {"argmax", {"h"}, R"({"dim": 1})", {64}, "int64"},
      {"norm", {"x"}, R"({"dims": [2], "p": 3.0})", {8, 33}},
      {"log_softmax", {"x"}, R"({"dim": 1})", {8, 33, 1000}},
      {"softmax", {"h"}, R"({"dim": 1})", {64, 3000}, "float16"},
      {"logsumexp", {"x"}, R"({"dims": [1, 2]})", {8}},
      {"max_pool",
       {"x"},
       R"({"kernel_size": [8], "stride": [1], "padding": [4], "dilation": [3], "ceil_mode": false})",
       {8, 33, 987}},
      {"batch_norm", {"x", "w", "", "", ""}, R"({"training": true})", {8, 33, 1000}},
      {"instance_norm", {"x", "", "", "", ""}, R"({"use_input_stats": true})", {8, 33, 1000}},
  };
  expect_builds(emit(graph_from_text(graph_json(ins, nodes))), "reduce-build-a");
}

TEST(CodegenReduceBuild, ScansAndLosses) {
  std::vector<In> ins = {
      {"x", {3, 100000}}, {"l", {64, 10, 5}}, {"t", {64, 5}, "int64"}, {"a", {64, 50}}, {"b", {64, 50}}};
  std::vector<NodeSpec> nodes = {
      {"cumsum", {"x"}, R"({"dim": 1})", {3, 100000}},
      {"cumprod", {"x"}, R"({"dim": 0})", {3, 100000}},
      {"cross_entropy", {"l", "t"}, R"({"reduction": "mean", "label_smoothing": 0.1})", {}},
      {"kl_div", {"a", "b"}, R"({"reduction": "batchmean", "log_target": true})", {}},
      {"triplet_margin_loss", {"a", "b", "a"}, R"({"reduction": "none", "p": 2.0})", {64}},
  };
  expect_builds(emit(graph_from_text(graph_json(ins, nodes))), "reduce-build-b");
}

}  // namespace
}  // namespace kforge::codegen
