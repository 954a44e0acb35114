// Helpers for unit tests: building graphs from JSON text and temporary directories.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/json.h"
#include "codegen/program.h"
#include "ir/graph.h"

namespace kforge::testing {

// Parses graph JSON text; fails the test with the message on error.
inline ir::Graph graph_from_text(const std::string& text) {
  auto j = parse_json(text, "test graph");
  EXPECT_TRUE(j.is_ok()) << j.status().message();
  auto g = ir::graph_from_json(j.value(), "test graph");
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  return std::move(g).value();
}

// The error message of parsing `text` as a graph ("" if it parsed).
inline std::string graph_error(const std::string& text) {
  auto j = parse_json(text, "test graph");
  if (!j.is_ok()) return j.status().message();
  auto g = ir::graph_from_json(j.value(), "test graph");
  return g.is_ok() ? "" : g.status().message();
}

inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("kforge-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// Builds `p` with nvcc into a fresh temporary directory (its own build cache) and expects success;
// skips the calling test's build check when no CUDA toolchain is found. Call it last in a test.
void expect_builds_with_nvcc(const codegen::Program& p, const std::string& tag);

// One-node graph JSON: inputs given as (id, shape) pairs, float32 tensors unless `input_dtypes` names
// their dtypes (one per input).
std::string one_node_graph(const std::string& op, const std::vector<std::pair<std::string, ir::Shape>>& inputs,
                           const std::string& attrs_json, const ir::Shape& out_shape,
                           const std::string& out_dtype = "float32", const std::vector<std::string>& input_dtypes = {});

}  // namespace kforge::testing
