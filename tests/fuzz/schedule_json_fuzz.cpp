// libFuzzer target: schedule JSON against a fixed small graph. Any input must give a schedule or a
// Status; an accepted schedule must pass check_schedule and round-trip.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/json.h"
#include "ir/graph.h"
#include "schedule/schedule.h"

namespace {

const kforge::ir::Graph& graph() {
  static const kforge::ir::Graph g = [] {
    auto j = kforge::Json::parse(R"({"format": "kforge.graph/1", "name": "fuzz",
      "inputs": [{"id": "x", "name": "x", "shape": [4, 8], "dtype": "float32"}],
      "params": [{"id": "w", "path": "fc.weight", "kind": "parameter", "shape": [16, 8], "dtype": "float32"}],
      "nodes": [{"id": "h", "op": "linear", "inputs": ["x", "w", null], "attrs": {}, "shape": [4, 16], "dtype": "float32"},
                {"id": "r", "op": "relu", "inputs": ["h"], "attrs": {}, "shape": [4, 16], "dtype": "float32"},
                {"id": "y", "op": "sum", "inputs": ["r"], "attrs": {"dims": [1], "keepdim": false}, "shape": [4], "dtype": "float32"}],
      "outputs": ["y"]})");
    return std::move(kforge::ir::graph_from_json(j, "fuzz graph")).value();
  }();
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = kforge::parse_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!j.is_ok()) return 0;
  auto s = kforge::schedule::schedule_from_json(graph(), j.value(), "fuzz");
  if (!s.is_ok()) return 0;
  if (!kforge::schedule::check_schedule(graph(), s.value()).is_ok()) __builtin_trap();
  auto back = kforge::Json::parse(kforge::schedule::schedule_to_json(graph(), s.value()).dump());
  if (!kforge::schedule::schedule_from_json(graph(), back, "again").is_ok()) __builtin_trap();
  return 0;
}
