// Sizing: batch rounding, the secant towards a target time, memory caps, and the eager prediction
// of an imported graph (re-inferred by the C++ IR).
#include <gtest/gtest.h>

#include "synth/sizing.h"
#include "test_util.h"

namespace kforge::synth {
namespace {

TEST(SynthSizing, RoundsBatchesToUsualSizes) {
  EXPECT_EQ(round_batch(37), 37);
  EXPECT_EQ(round_batch(130), 128);
  EXPECT_EQ(round_batch(5000), 4992);
}

TEST(SynthSizing, SecantReachesTheTarget) {
  // t(b) = 10 us + 1 us * b: 5 ms at b = 4990 -> 4928 after rounding to 64.
  int64_t b = batch_for_target(1, 11e-6, 2, 12e-6, 5e-3, 1 << 20);
  EXPECT_EQ(b, 4928);
  EXPECT_EQ(batch_for_target(1, 11e-6, 2, 12e-6, 5e-3, 1000), 1000);  // the limit
  EXPECT_EQ(batch_for_target(1, 11e-6, 2, 12e-6, 1e-9, 1000), 2);     // at least 2
}

TEST(SynthSizing, MemoryCapsLimitTheBatch) {
  EagerPrediction at1;
  EagerPrediction at2;
  at1.value_bytes = {1000, 4096};  // a parameter (fixed) and an activation (grows)
  at2.value_bytes = {1000, 8192};
  RuntimeWindow w;
  w.max_tensor_bytes = 4096 * 100;
  EXPECT_EQ(max_batch(at1, at2, w), 100);
  w.max_tensor_bytes = int64_t{1} << 40;
  w.max_total_bytes = 1000 + 4096 * 50;
  EXPECT_EQ(max_batch(at1, at2, w), 50);
  w.max_total_bytes = int64_t{1} << 40;
  EXPECT_EQ(max_batch(at1, at2, w), w.max_batch);
}

TEST(SynthSizing, PredictsAGraphItCanRead) {
  std::string g = kforge::testing::one_node_graph("relu", {{"x", {4096, 4096}}}, "{}", {4096, 4096});
  auto p = predict_eager(parse_json(g, "test").value(), "test");
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->kernels, 1);
  EXPECT_EQ(p->registry_ops, std::vector<std::string>{"relu"});
  EXPECT_GT(p->seconds, 2 * 4096.0 * 4096 * 4 / 5e12);  // at least the bytes over the bandwidth
  EXPECT_EQ(p->output_shape, (std::vector<int64_t>{4096, 4096}));
}

TEST(SynthSizing, RejectsAGraphWhoseShapesDisagree) {
  std::string g = kforge::testing::one_node_graph("relu", {{"x", {4, 8}}}, "{}", {4, 9});
  EXPECT_FALSE(predict_eager(parse_json(g, "test").value(), "test").is_ok());
}

}  // namespace
}  // namespace kforge::synth
