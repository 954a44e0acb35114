// The measurement protocol's registries: names resolve to their numbers, unknown names and malformed
// baseline lists are refused with the known names, and the request carries every field.
#include <gtest/gtest.h>

#include "sandbox/protocol.h"

namespace kforge::sandbox {
namespace {

TEST(Protocol, NamesResolveToTheRegistrysNumbers) {
  auto ca = protocol_named("cuda-agent");
  ASSERT_TRUE(ca.is_ok());
  EXPECT_EQ(ca->mode, "eval");
  EXPECT_DOUBLE_EQ(ca->atol, 1e-2);
  auto kb = protocol_named("kernelbench");
  ASSERT_TRUE(kb.is_ok());
  EXPECT_EQ(kb->mode, "train");
  EXPECT_DOUBLE_EQ(kb->rtol, 1e-4);
  EXPECT_EQ(kb->input_sets, 5);
  auto bad = protocol_named("loose");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("cuda-agent, kernelbench"), std::string::npos);
  EXPECT_NE(protocol_help().find("1e-4"), std::string::npos);
}

TEST(Protocol, TheRequestCarriesTheWholeObject) {
  const auto j = protocol_to_json(protocol_named("kernelbench").value());
  EXPECT_EQ(j["name"], "kernelbench");
  EXPECT_EQ(j["mode"], "train");
  EXPECT_DOUBLE_EQ(j["atol"].get<double>(), 1e-4);
  EXPECT_EQ(j["input_sets"], 5);
  Timing t;
  const auto tj = timing_to_json(t);
  EXPECT_EQ(tj["method"], "events");
  EXPECT_EQ(tj["baselines"].size(), 3u);
}

TEST(Protocol, BaselineListsAreChecked) {
  auto ok = parse_baselines("eager, compile_max_autotune");
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(ok.value(), (std::vector<std::string>{"eager", "compile_max_autotune"}));
  EXPECT_FALSE(parse_baselines("eager,,compile").is_ok());
  EXPECT_FALSE(parse_baselines("eager,eager").is_ok());
  auto unknown = parse_baselines("tensorrt");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("compile_reduce_overhead"), std::string::npos);
  Timing t;
  t.method = "stopwatch";
  EXPECT_FALSE(check_timing(t).is_ok());
}

}  // namespace
}  // namespace kforge::sandbox
