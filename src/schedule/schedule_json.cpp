// Schedule <-> JSON (`kforge.schedule/1`), so plans can be saved, inspected and replayed.
#include <algorithm>
#include <utility>
#include <vector>

#include "base/files.h"
#include "schedule/planner.h"
#include "schedule/schedule.h"

namespace kforge::schedule {

OrderedJson schedule_to_json(const ir::Graph& g, const Schedule& s) {
  OrderedJson j;
  j["format"] = "kforge.schedule/1";
  j["graph"] = g.name;
  j["precision"] = s.precision;
  j["tolerance"] = s.tolerance;
  j["cuda_graph"] = s.cuda_graph;
  j["applied"] = s.applied;
  j["kernels"] = OrderedJson::array();
  for (const auto& k : s.kernels) {
    OrderedJson jk;
    jk["name"] = k.name;
    jk["impl"] = impl_name(k.impl);
    jk["strategy"] = strategy_name(k.strategy);
    OrderedJson nodes = OrderedJson::array();
    for (int n : k.nodes) nodes.push_back(g.value(g.nodes()[static_cast<size_t>(n)].output).id);
    jk["nodes"] = nodes;
    OrderedJson knobs = OrderedJson::object();
    // By name, so the file reads the same whatever the registry's order.
    std::vector<std::pair<std::string_view, int64_t>> by_name;
    for (const auto& [key, v] : k.knobs) by_name.emplace_back(knob_name(key), v);
    std::sort(by_name.begin(), by_name.end());
    for (const auto& [key, v] : by_name) knobs[std::string(key)] = v;
    jk["knobs"] = knobs;
    j["kernels"].push_back(jk);
  }
  return j;
}

std::string program_hash_of_json(Json schedule_json) {
  if (schedule_json.is_object()) schedule_json.erase("applied");
  return content_hash(schedule_json.dump()).substr(0, 24);
}

std::string program_hash(const ir::Graph& g, const Schedule& s) {
  return program_hash_of_json(Json::parse(schedule_to_json(g, s).dump()));
}

namespace {

StatusOr<Schedule> schedule_from_json_fields(const ir::Graph& g, const Json& j, const std::string& what) {
  if (!j.is_object() || j.value("format", "") != "kforge.schedule/1") {
    return invalid_argument(
        what + ": not a kforge schedule (expected \"format\": \"kforge.schedule/1\"; make one with `kforge plan`)");
  }
  Schedule s;
  s.precision = j.value("precision", "fp32");
  s.tolerance = j.value("tolerance", 1e-4);
  s.cuda_graph = j.value("cuda_graph", false);
  for (const auto& a : j.value("applied", Json::array())) {
    if (a.is_string()) s.applied.push_back(a.get<std::string>());
  }
  if (!j.contains("kernels") || !j["kernels"].is_array()) return invalid_argument(what + ": needs a \"kernels\" list");
  for (const auto& jk : j["kernels"]) {
    Kernel k;
    k.name = jk.value("name", "");
    std::string impl = jk.value("impl", "generated");
    if (impl == "generated") {
      k.impl = Impl::kGenerated;
    } else if (impl == "library") {
      k.impl = Impl::kLibrary;
    } else if (impl == "alias") {
      k.impl = Impl::kAlias;
    } else {
      return invalid_argument(what + ": kernel " + k.name + " has unknown impl '" + impl + "'");
    }
    const Json nodes = jk.value("nodes", Json::array());
    for (const auto& jn : nodes) {
      if (!jn.is_string()) return invalid_argument(what + ": kernel " + k.name + ": nodes are value ids");
      ir::ValueIndex v = g.find(jn.get<std::string>());
      if (v == ir::kNoValue || g.value(v).kind != ir::ValueKind::kNode) {
        return invalid_argument(what + ": kernel " + k.name + " names '" + jn.get<std::string>() +
                                "', which is no node of graph " + g.name);
      }
      k.nodes.push_back(g.value(v).owner);
    }
    if (jk.contains("strategy")) {
      const std::string name = jk["strategy"].get<std::string>();
      auto strategy = strategy_named(name);
      if (!strategy) {
        return invalid_argument(what + ": kernel " + k.name + " has unknown strategy '" + name +
                                "' (known: " + strategy_names() + ")");
      }
      k.strategy = *strategy;
    } else if (!k.nodes.empty()) {
      k.strategy = default_strategy(g, g.nodes()[static_cast<size_t>(k.nodes.back())]).strategy;
    }
    const Json knobs = jk.value("knobs", Json::object());
    for (const auto& [key, v] : knobs.items()) {
      auto knob = knob_named(key);
      if (!knob) {
        return invalid_argument(what + ": kernel " + k.name + " has unknown knob '" + key +
                                "' (known: " + knob_names() + ")");
      }
      if (!v.is_number_integer())
        return invalid_argument(what + ": kernel " + k.name + ": knob " + key + " must be an int");
      k.knobs[*knob] = v.get<int64_t>();
    }
    s.kernels.push_back(std::move(k));
  }
  KF_RETURN_IF_ERROR(check_schedule(g, s).with_context(what));
  return s;
}

}  // namespace

StatusOr<Schedule> schedule_from_json(const ir::Graph& g, const Json& j, const std::string& what) {
  try {
    return schedule_from_json_fields(g, j, what);
  } catch (const Json::exception& e) {
    return invalid_argument(what + ": a field has the wrong type or value (" + std::string(e.what()) + ")");
  }
}

}  // namespace kforge::schedule
