// Small graphs for the agent tests: elementwise chains, a GEMM with an epilogue, a convolution.
#pragma once

#include <string>
#include <vector>

#include "agent/env.h"
#include "test_util.h"

namespace kforge::agent::testing {

// x (8, 16) -> mul 2 -> add b (16) -> relu: two fuse_elementwise sites.
inline const char* kChainGraph = R"({"format": "kforge.graph/1", "name": "chain",
  "inputs": [{"id": "x", "name": "x", "shape": [8, 16], "dtype": "float32"},
             {"id": "b", "name": "b", "shape": [16], "dtype": "float32"}],
  "params": [],
  "nodes": [
    {"id": "t", "op": "mul", "inputs": ["x", null], "attrs": {"scalar": 2.0, "reverse": false}, "shape": [8, 16], "dtype": "float32"},
    {"id": "u", "op": "add", "inputs": ["t", "b"], "attrs": {"scalar": null, "reverse": false}, "shape": [8, 16], "dtype": "float32"},
    {"id": "y", "op": "relu", "inputs": ["u"], "attrs": {}, "shape": [8, 16], "dtype": "float32"}],
  "outputs": ["y"]})";

// linear (256x512 by 1024x512) -> relu -> mul 2 -> add x2: a compute-bound GEMM (tf32 site under
// cuda-agent) and an elementwise epilogue.
inline const char* kGemmGraph = R"({"format": "kforge.graph/1", "name": "gemm_epilogue",
  "inputs": [{"id": "x", "name": "x", "shape": [256, 512], "dtype": "float32"},
             {"id": "x2", "name": "x2", "shape": [256, 1024], "dtype": "float32"}],
  "params": [{"id": "w", "path": "fc.weight", "kind": "parameter", "shape": [1024, 512], "dtype": "float32"},
             {"id": "wb", "path": "fc.bias", "kind": "parameter", "shape": [1024], "dtype": "float32"}],
  "nodes": [
    {"id": "l", "op": "linear", "inputs": ["x", "w", "wb"], "attrs": {}, "shape": [256, 1024], "dtype": "float32"},
    {"id": "r", "op": "relu", "inputs": ["l"], "attrs": {}, "shape": [256, 1024], "dtype": "float32"},
    {"id": "m", "op": "mul", "inputs": ["r", null], "attrs": {"scalar": 2.0, "reverse": false}, "shape": [256, 1024], "dtype": "float32"},
    {"id": "y", "op": "add", "inputs": ["m", "x2"], "attrs": {"scalar": null, "reverse": false}, "shape": [256, 1024], "dtype": "float32"}],
  "outputs": ["y"]})";

// conv (3x3, 64 -> 64 channels on 8x64x56x56) -> relu: a conv_epilogue site.
inline const char* kConvGraph = R"({"format": "kforge.graph/1", "name": "conv_relu",
  "inputs": [{"id": "img", "name": "img", "shape": [8, 64, 56, 56], "dtype": "float32"}],
  "params": [{"id": "cw", "path": "conv.weight", "kind": "parameter", "shape": [64, 64, 3, 3], "dtype": "float32"},
             {"id": "cb", "path": "conv.bias", "kind": "parameter", "shape": [64], "dtype": "float32"}],
  "nodes": [
    {"id": "c", "op": "conv", "inputs": ["img", "cw", "cb"],
     "attrs": {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1}, "shape": [8, 64, 56, 56], "dtype": "float32"},
    {"id": "y", "op": "relu", "inputs": ["c"], "attrs": {}, "shape": [8, 64, 56, 56], "dtype": "float32"}],
  "outputs": ["y"]})";

inline Task task_from(const char* graph_text, const std::string& protocol = "cuda-agent") {
  Task t;
  t.graph = kforge::testing::graph_from_text(graph_text);
  t.name = t.graph.name;
  t.protocol = protocol;
  return t;
}

inline std::vector<Task> all_test_tasks() {
  std::vector<Task> tasks;
  for (const char* g : {kChainGraph, kGemmGraph, kConvGraph}) {
    tasks.push_back(task_from(g, "cuda-agent"));
    tasks.push_back(task_from(g, "kernelbench"));
  }
  return tasks;
}

}  // namespace kforge::agent::testing
