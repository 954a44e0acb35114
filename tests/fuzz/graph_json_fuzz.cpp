// libFuzzer target: graph JSON (docs/graph-format.md) from arbitrary bytes. Any input must give a
// graph or a Status, never a crash, a hang or an abort (KF_CHECK); valid graphs must round-trip.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/json.h"
#include "ir/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = kforge::parse_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!j.is_ok()) return 0;
  auto g = kforge::ir::graph_from_json(j.value(), "fuzz");
  if (!g.is_ok()) return 0;
  auto again = kforge::ir::graph_from_json(kforge::Json::parse(kforge::ir::graph_to_json(g.value()).dump()), "again");
  if (!again.is_ok()) __builtin_trap();  // a graph we accepted must read back
  return 0;
}
