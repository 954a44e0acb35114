// The recurrent op `rnn` (ir/recurrent.h): shape inference and its errors, the JSON round trip, the planner's
// cudnn_rnn, the cost model, and the emitted kf_cudnn_rnn call built with nvcc.
#include <gtest/gtest.h>

#include "base/json.h"
#include "codegen/program.h"
#include "costmodel/roofline.h"
#include "ir/recurrent.h"
#include "schedule/catalogue.h"
#include "skills/planner.h"
#include "test_util.h"

namespace kforge {
namespace {

using kforge::testing::graph_error;
using kforge::testing::graph_from_text;

struct RnnCase {
  std::string mode = "lstm";
  int64_t seq = 7, batch = 3, input = 16, hidden = 32, layers = 2;
  bool bidirectional = true, batch_first = false, biases = true, h0 = true, c0 = true;
  std::string x_dtype = "float32";
  int64_t drop_weights = 0;  // leave this many weights out (an error case)
};

int64_t gates(const std::string& mode) {
  return mode == "lstm" ? 4 : mode == "gru" ? 3 : 1;
}

// A graph of one `rnn` node over inputs x, h0, c0 and the weights as parameters, in torch's order.
Json rnn_graph(const RnnCase& c, std::vector<int64_t> out_shape = {}) {
  const int64_t d = c.bidirectional ? 2 : 1, g = gates(c.mode);
  Json j;
  j["format"] = "kforge.graph/1";
  j["name"] = "t_rnn";
  j["inputs"] = Json::array();
  j["params"] = Json::array();
  const ir::Shape x = c.batch_first ? ir::Shape{c.batch, c.seq, c.input} : ir::Shape{c.seq, c.batch, c.input};
  const ir::Shape state{c.layers * d, c.batch, c.hidden};
  j["inputs"].push_back({{"id", "x"}, {"name", "x"}, {"shape", x}, {"dtype", c.x_dtype}});
  Json ins = Json::array({"x"});
  for (const char* s : {"h0", "c0"}) {
    const bool present = std::string(s) == "h0" ? c.h0 : c.c0;
    if (present) j["inputs"].push_back({{"id", s}, {"name", s}, {"shape", state}, {"dtype", "float32"}});
    ins.push_back(present ? Json(s) : Json(nullptr));
  }
  int n = 0;
  for (int64_t l = 0; l < c.layers; ++l) {
    for (int64_t dir = 0; dir < d; ++dir) {
      std::vector<ir::Shape> shapes{{g * c.hidden, l == 0 ? c.input : d * c.hidden}, {g * c.hidden, c.hidden}};
      if (c.biases) shapes.insert(shapes.end(), {{g * c.hidden}, {g * c.hidden}});
      for (const auto& s : shapes) {
        const std::string id = "w" + std::to_string(n++);
        j["params"].push_back(
            {{"id", id}, {"path", "rnn." + id}, {"kind", "parameter"}, {"shape", s}, {"dtype", "float32"}});
        ins.push_back(id);
      }
    }
  }
  for (int64_t i = 0; i < c.drop_weights; ++i) ins.erase(ins.end() - 1);
  const int64_t packed = c.seq * c.batch * d * c.hidden + state[0] * c.batch * c.hidden * (c.mode == "lstm" ? 2 : 1);
  if (out_shape.empty()) out_shape = {packed};
  j["nodes"] = Json::array();
  j["nodes"].push_back({{"id", "v0"},
                        {"op", "rnn"},
                        {"inputs", ins},
                        {"attrs",
                         {{"mode", c.mode},
                          {"input_size", c.input},
                          {"hidden_size", c.hidden},
                          {"num_layers", c.layers},
                          {"bidirectional", c.bidirectional},
                          {"batch_first", c.batch_first},
                          {"has_biases", c.biases}}},
                        {"shape", out_shape},
                        {"dtype", "float32"}});
  j["outputs"] = Json::array({"v0"});
  return j;
}

TEST(RnnShape, PacksOutputAndStates) {
  ir::Graph g = graph_from_text(rnn_graph({}).dump());
  auto r = ir::rnn_geometry(g, g.nodes()[0]);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->output_shape(), (ir::Shape{7, 3, 64}));
  EXPECT_EQ(r->state_shape(), (ir::Shape{4, 3, 32}));
  EXPECT_EQ(g.type(g.nodes()[0].output).shape, (ir::Shape{7 * 3 * 64 + 2 * 4 * 3 * 32}));
  EXPECT_EQ(r->weight_count(), 16);
  EXPECT_EQ(r->weight_shape(4), (ir::Shape{128, 16}));  // layer 0, reverse direction, w_ih
  EXPECT_EQ(r->weight_shape(8), (ir::Shape{128, 64}));  // layer 1 reads both directions
}

TEST(RnnShape, GruAndRnnModesBatchFirstWithoutStates) {
  RnnCase gru{.mode = "gru", .bidirectional = false, .batch_first = true, .h0 = false, .c0 = false};
  ir::Graph g = graph_from_text(rnn_graph(gru).dump());
  EXPECT_EQ(g.type(g.nodes()[0].output).shape, (ir::Shape{3 * 7 * 32 + 2 * 3 * 32}));
  auto r = ir::rnn_geometry(g, g.nodes()[0]);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->output_shape(), (ir::Shape{3, 7, 32}));
  EXPECT_EQ(r->gates, 3);
  for (const char* mode : {"rnn_tanh", "rnn_relu"}) {
    RnnCase c{.mode = mode, .biases = false, .c0 = false};
    EXPECT_EQ(graph_error(rnn_graph(c).dump()), "") << mode;
  }
}

TEST(RnnShape, ErrorsSayWhatIsWrong) {
  EXPECT_NE(graph_error(rnn_graph({.drop_weights = 1}).dump()).find("needs 16 weights"), std::string::npos);
  EXPECT_NE(graph_error(rnn_graph({.mode = "gru"}).dump()).find("c0 is an lstm's only"), std::string::npos);
  EXPECT_NE(graph_error(rnn_graph({.x_dtype = "float64"}).dump()).find("float32 only"), std::string::npos);
  EXPECT_NE(graph_error(rnn_graph({.mode = "elman"}).dump()).find("unknown rnn mode"), std::string::npos);
  // the importer's shape must agree with the rule
  EXPECT_NE(graph_error(rnn_graph({}, {10}).dump()), "");
}

TEST(RnnJson, RoundTripKeepsAbsentStatesAndWeights) {
  ir::Graph g = graph_from_text(rnn_graph({.h0 = false, .c0 = false}).dump());
  const OrderedJson once = ir::graph_to_json(g);
  ir::Graph back = graph_from_text(Json::parse(once.dump()).dump());
  EXPECT_EQ(ir::graph_to_json(back).dump(), once.dump());
  const auto& inputs = back.nodes()[0].inputs;
  ASSERT_EQ(inputs.size(), 3u + 16u);
  EXPECT_EQ(inputs[1], ir::kNoValue);
  EXPECT_EQ(inputs[2], ir::kNoValue);
  EXPECT_EQ(back.nodes()[0].attrs.s("mode"), "lstm");
}

TEST(RnnPlan, PlannerPicksCudnnRnnAndCostsItsSteps) {
  ir::Graph g = graph_from_text(rnn_graph({}).dump());
  auto s = skills::plan_default(g);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->kernels.size(), 1u);
  EXPECT_EQ(s->kernels[0].strategy, schedule::Strategy::kCudnnRnn);
  EXPECT_EQ(s->kernels[0].impl, schedule::Impl::kLibrary);
  EXPECT_EQ(schedule::strategy_named("cudnn_rnn"), schedule::Strategy::kCudnnRnn);
  const auto cost = costmodel::kernel_cost(g, *s, s->kernels[0], costmodel::DeviceCeilings{});
  EXPECT_GT(cost.flops, 2.0 * 7 * 3 * (2 * 128 * (16 + 32) + 2 * 128 * (64 + 32)));
  EXPECT_EQ(cost.bound, "latency");  // 7 steps of 2 layers, tiny GEMMs
  EXPECT_GE(cost.seconds, 7 * 2 * 5e-6);
}

codegen::Program emit(const ir::Graph& g, const std::string& precision = "fp32") {
  auto s = schedule::plan_one_kernel_per_op(g, {.precision = precision});
  auto p = codegen::emit_program(g, s, {.library_file = "lib.so", .reference_source = "# reference\n"});
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return std::move(p).value();
}

bool has(const std::string& code, const std::string& s) {
  return code.find(s) != std::string::npos;
}

TEST(RnnCodegen, CallsCudnnRnnWithTorchSetup) {
  ir::Graph g = graph_from_text(rnn_graph({}).dump());
  codegen::Program p = emit(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  const auto& k = p.kernels[0];
  EXPECT_EQ(k.libraries, std::vector<std::string>{"cudnn"});
  EXPECT_TRUE(has(k.code, "const KfCudnnRnn kRnn")) << k.code;
  EXPECT_TRUE(has(k.code, "CUDNN_LSTM,"));
  EXPECT_TRUE(has(k.code, "CUDNN_DEFAULT_MATH,"));  // torch's allow_tf32 default
  EXPECT_TRUE(has(k.code, "const void* const weights[16]"));
  // output at 0, h_n after the output (7 * 3 * 64), c_n after h_n (4 * 3 * 32 more)
  EXPECT_TRUE(has(k.code, "weights, out, out + 1344LL, out + 1728LL);")) << k.code;
  // x, h0, c0 are the kernel's first operands
  EXPECT_TRUE(has(k.code,
                  "kf_cudnn_rnn(ctx, &kRnn, ((const float*)bufs[0]), ((const float*)bufs[1]), "
                  "((const float*)bufs[2]), weights"))
      << k.code;
  EXPECT_GT(k.workspace_bytes, 0u);
}

TEST(RnnCodegen, GruWithoutStatesAndExactPrecision) {
  ir::Graph g = graph_from_text(rnn_graph({.mode = "gru", .batch_first = true, .h0 = false, .c0 = false}).dump());
  codegen::Program p = emit(g, "3xtf32");
  const auto& k = p.kernels[0];
  EXPECT_TRUE(has(k.code, "CUDNN_GRU,"));
  EXPECT_TRUE(has(k.code, "CUDNN_FMA_MATH,"));
  EXPECT_TRUE(has(k.code, "kf_cudnn_rnn(ctx, &kRnn, ((const float*)bufs[0]), nullptr, nullptr, weights")) << k.code;
  EXPECT_TRUE(has(k.code, ", nullptr);")) << k.code;  // no c_n
}

TEST(RnnCodegen, BuildsWithNvcc) {
  ir::Graph g = graph_from_text(rnn_graph({}).dump());
  kforge::testing::expect_builds_with_nvcc(emit(g), "rnn");
}

}  // namespace
}  // namespace kforge
