// Graph JSON: round trip, defaults, and the messages a malformed graph gets.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace kforge::ir {
namespace {

using kforge::testing::graph_error;
using kforge::testing::graph_from_text;
using kforge::testing::one_node_graph;

TEST(GraphJson, RoundTripKeepsEverything) {
  std::string text = one_node_graph("softmax", {{"x", {4, 8}}}, R"({"dim": 1})", {4, 8});
  Graph g = graph_from_text(text);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].op, OpId::kSoftmax);
  EXPECT_EQ(g.nodes()[0].attrs.i("dim"), 1);
  Graph again = graph_from_text(graph_to_json(g).dump());
  EXPECT_EQ(graph_to_json(again).dump(), graph_to_json(g).dump());
}

TEST(GraphJson, FillsDefaultsFromTheSchema) {
  Graph g = graph_from_text(one_node_graph("leaky_relu", {{"x", {3}}}, "{}", {3}));
  EXPECT_DOUBLE_EQ(g.nodes()[0].attrs.f("negative_slope"), 0.01);
}

TEST(GraphJson, InfinityScalarsRoundTrip) {
  Graph g = graph_from_text(one_node_graph("maximum", {{"x", {3}}}, R"({"scalar": "-inf"})", {3}));
  EXPECT_TRUE(std::isinf(g.nodes()[0].attrs.f("scalar")));
  Graph again = graph_from_text(graph_to_json(g).dump());
  EXPECT_LT(again.nodes()[0].attrs.f("scalar"), 0);
}

TEST(GraphJson, NonFiniteFloatsRoundTripAsStrings) {
  Graph g = graph_from_text(one_node_graph("clamp", {{"x", {3}}}, R"({"min": "-inf", "max": "nan"})", {3}));
  EXPECT_TRUE(std::isinf(g.nodes()[0].attrs.f("min")) && g.nodes()[0].attrs.f("min") < 0);
  EXPECT_TRUE(std::isnan(g.nodes()[0].attrs.f("max")));
  Json j = graph_to_json(g);
  EXPECT_EQ(j["nodes"][0]["attrs"]["min"], "-inf");
  EXPECT_EQ(j["nodes"][0]["attrs"]["max"], "nan");
  Graph pad = graph_from_text(one_node_graph("constant_pad", {{"x", {3}}}, R"({"pad": [1, 1], "value": "inf"})", {5}));
  EXPECT_TRUE(std::isinf(pad.nodes()[0].attrs.f("value")) && pad.nodes()[0].attrs.f("value") > 0);
  EXPECT_EQ(graph_to_json(pad)["nodes"][0]["attrs"]["value"], "inf");
  // A scalar attr (full's value) as well; the text survives a second round trip unchanged.
  Graph full =
      graph_from_text(one_node_graph("full", {}, R"({"shape": [2], "value": "nan", "dtype": "float32"})", {2}));
  EXPECT_TRUE(std::isnan(full.nodes()[0].attrs.f("value")));
  const std::string text = graph_to_json(full).dump();
  EXPECT_NE(text.find(R"("value":"nan")"), std::string::npos) << text;
  EXPECT_EQ(graph_to_json(graph_from_text(text)).dump(), text);
}

TEST(GraphJsonErrors, OtherStringsInNumberAttrsAreNamed) {
  for (const char* bad : {"Infinity", "NaN", "+inf", "1.5"}) {
    const std::string attrs = std::string(R"({"min": ")") + bad + "\"}";
    std::string e = graph_error(one_node_graph("clamp", {{"x", {3}}}, attrs, {3}));
    EXPECT_NE(e.find(R"(attr 'min' must be a number or one of the strings "inf", "-inf", "nan", not ")" +
                     std::string(bad) + "\""),
              std::string::npos)
        << e;
  }
  std::string e =
      graph_error(one_node_graph("full", {}, R"({"shape": [2], "value": "-nan", "dtype": "float32"})", {2}));
  EXPECT_NE(e.find("attr 'value' must be a number or one of the strings"), std::string::npos) << e;
  e = graph_error(one_node_graph("clamp", {{"x", {3}}}, R"({"min": [1]})", {3}));
  EXPECT_NE(e.find("attr 'min' must be a number"), std::string::npos) << e;
}

TEST(GraphJsonErrors, NotAGraph) {
  EXPECT_NE(graph_error(R"({"nodes": []})").find("not a kforge graph"), std::string::npos);
  EXPECT_NE(graph_error("[1, 2").find("not valid JSON"), std::string::npos);
}

TEST(GraphJsonErrors, UnknownOpIsNamed) {
  std::string e = graph_error(one_node_graph("fft", {{"x", {3}}}, "{}", {3}));
  EXPECT_NE(e.find("unknown op 'fft'"), std::string::npos) << e;
}

TEST(GraphJsonErrors, UnknownAndMissingAttrs) {
  EXPECT_NE(graph_error(one_node_graph("relu", {{"x", {3}}}, R"({"slope": 1})", {3})).find("has no attr 'slope'"),
            std::string::npos);
  EXPECT_NE(graph_error(one_node_graph("softmax", {{"x", {3}}}, "{}", {3})).find("needs attr 'dim'"),
            std::string::npos);
  EXPECT_NE(
      graph_error(one_node_graph("softmax", {{"x", {3}}}, R"({"dim": "a"})", {3})).find("attr 'dim' must be an int"),
      std::string::npos);
}

TEST(GraphJsonErrors, ShapeDisagreementWithTorchIsReported) {
  std::string e = graph_error(one_node_graph("matmul", {{"a", {2, 3}}, {"b", {3, 5}}}, "{}", {2, 4}));
  EXPECT_NE(e.find("torch recorded float32[2, 4] but kforge infers float32[2, 5]"), std::string::npos) << e;
}

TEST(GraphJson, ComplexParamRoundTripsAndMustBeARealView) {
  const std::string param = R"("params":[{"id":"f","path":"freqs","kind":"buffer","shape":[3,2],"dtype":"float32",)"
                            R"("complex":true}],)";
  const std::string rest = R"("nodes":[{"id":"y","op":"relu","inputs":["f"],"shape":[3,2],"dtype":"float32"}],)"
                           R"("outputs":["y"]})";
  Graph g = graph_from_text(R"({"format":"kforge.graph/1","inputs":[],)" + param + rest);
  ASSERT_TRUE(g.params()[0].complex_view);
  EXPECT_EQ(graph_to_json(g)["params"][0].value("complex", false), true);
  std::string bad = R"({"format":"kforge.graph/1","inputs":[],"params":[{"id":"f","path":"freqs","kind":"buffer",)"
                    R"("shape":[3],"dtype":"float32","complex":true}],)"
                    R"("nodes":[{"id":"y","op":"relu","inputs":["f"],"shape":[3],"dtype":"float32"}],"outputs":["y"]})";
  EXPECT_NE(graph_error(bad).find("a complex param is its real view"), std::string::npos) << graph_error(bad);
}

TEST(GraphJsonErrors, UndefinedInputIsNamed) {
  std::string text = R"({"format":"kforge.graph/1","inputs":[],"params":[],
    "nodes":[{"id":"y","op":"relu","inputs":["ghost"],"shape":[1],"dtype":"float32"}],"outputs":["y"]})";
  EXPECT_NE(graph_error(text).find("uses 'ghost', which is not defined before it"), std::string::npos);
}

TEST(GraphJsonErrors, WrongInputCount) {
  std::string e = graph_error(one_node_graph("relu", {{"a", {3}}, {"b", {3}}}, "{}", {3}));
  EXPECT_NE(e.find("takes 1 inputs, got 2"), std::string::npos) << e;
}

TEST(GraphJsonErrors, NoOutputs) {
  std::string text =
      R"({"format":"kforge.graph/1","inputs":[{"id":"x","shape":[1],"dtype":"float32"}],"params":[],"nodes":[],"outputs":[]})";
  EXPECT_NE(graph_error(text).find("no outputs"), std::string::npos);
}

// Found by the graph fuzzer (tests/fuzz): each crashed kforge before it was fixed.
TEST(GraphJsonErrors, ZeroStrideIsAnErrorNotADivisionByZero) {
  std::string e = graph_error(
      one_node_graph("conv", {{"x", {1, 2, 8, 8}}, {"w", {4, 2, 3, 3}}},
                     R"({"stride": [0, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1})", {1, 4, 6, 6}));
  EXPECT_NE(e.find("stride must be between 1 and 2^31, not 0"), std::string::npos) << e;
  e = graph_error(one_node_graph("conv", {{"x", {1, 2, 8, 8}}, {"w", {4, 2, 3, 3}}},
                                 R"({"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 0})",
                                 {1, 4, 6, 6}));
  EXPECT_NE(e.find("groups must be at least 1"), std::string::npos) << e;
}

TEST(GraphJsonErrors, AFieldOfTheWrongTypeIsAnErrorNotAnException) {
  std::string text = R"({"format":"kforge.graph/1","name":["not","a","string"],"inputs":[],"params":[],
    "nodes":[],"outputs":[]})";
  EXPECT_NE(graph_error(text).find("a field has the wrong type"), std::string::npos) << graph_error(text);
}

TEST(GraphJsonErrors, ANumberTooLargeIsAnErrorNotAnException) {
  auto j = parse_json(R"({"init_args": [1e999999]})", "big.json");
  ASSERT_FALSE(j.is_ok());
  EXPECT_NE(j.status().message().find("big.json is not valid JSON"), std::string::npos) << j.status().message();
}

}  // namespace
}  // namespace kforge::ir
