// The protocol registries (protocols.def, timing_methods.def, baselines.def) as lookups and help text.
#include "sandbox/protocol.h"

#include <algorithm>
#include <set>

namespace kforge::sandbox {
namespace {

struct ProtocolEntry {
  const char* name;
  const char* mode;
  double atol, rtol;
  int input_sets;
  const char* what;
};
constexpr ProtocolEntry kProtocols[] = {
#define KF_PROTOCOL(name, mode, atol, rtol, sets, what) {name, mode, atol, rtol, sets, what},
#include "sandbox/protocols.def"
#undef KF_PROTOCOL
};

struct NamedEntry {
  const char* name;
  const char* what;
};
constexpr NamedEntry kTimingMethods[] = {
#define KF_TIMING_METHOD(name, what) {name, what},
#include "sandbox/timing_methods.def"
#undef KF_TIMING_METHOD
};
constexpr NamedEntry kBaselines[] = {
#define KF_BASELINE(name, what) {name, what},
#include "sandbox/baselines.def"
#undef KF_BASELINE
};

template <typename Table>
std::vector<std::string> names_of(const Table& table) {
  std::vector<std::string> out;
  for (const auto& e : table) out.emplace_back(e.name);
  return out;
}

template <typename Table>
std::string help_of(const Table& table) {
  std::string out;
  for (const auto& e : table) out += std::string(out.empty() ? "" : "; ") + e.name + ": " + e.what;
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

StatusOr<Protocol> protocol_named(const std::string& name) {
  for (const auto& e : kProtocols) {
    if (name == e.name) return Protocol{e.name, e.mode, e.atol, e.rtol, e.input_sets};
  }
  return invalid_argument("unknown protocol '" + name + "': use " + joined(protocol_names()));
}

std::vector<std::string> protocol_names() {
  return names_of(kProtocols);
}
std::string protocol_help() {
  return "verification protocol: " + help_of(kProtocols);
}

OrderedJson protocol_to_json(const Protocol& p) {
  OrderedJson j;
  j["name"] = p.name;
  j["mode"] = p.mode;
  j["atol"] = p.atol;
  j["rtol"] = p.rtol;
  j["input_sets"] = p.input_sets;
  return j;
}

std::vector<std::string> timing_method_names() {
  return names_of(kTimingMethods);
}
std::string timing_method_help() {
  return "timing method, the same for candidate and baselines: " + help_of(kTimingMethods);
}
std::vector<std::string> baseline_names() {
  return names_of(kBaselines);
}
std::string baseline_help() {
  return "baselines timed beside the candidate (comma-separated): " + help_of(kBaselines);
}

Status check_timing(const Timing& t) {
  const auto methods = timing_method_names();
  if (std::find(methods.begin(), methods.end(), t.method) == methods.end()) {
    return invalid_argument("unknown timing method '" + t.method + "': use " + joined(methods));
  }
  const auto known = baseline_names();
  std::set<std::string> seen;
  for (const auto& b : t.baselines) {
    if (std::find(known.begin(), known.end(), b) == known.end()) {
      return invalid_argument("unknown baseline '" + b + "': use " + joined(known));
    }
    if (!seen.insert(b).second) return invalid_argument("baseline '" + b + "' named twice");
  }
  return Status::ok();
}

StatusOr<std::vector<std::string>> parse_baselines(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string part = list.substr(start, end - start);
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t") + 1);
    if (part.empty()) return invalid_argument("--baselines '" + list + "' has an empty name: give e.g. eager,compile");
    out.push_back(part);
    start = end + 1;
  }
  Timing probe;
  probe.baselines = out;
  KF_RETURN_IF_ERROR(check_timing(probe));
  return out;
}

OrderedJson timing_to_json(const Timing& t) {
  OrderedJson j;
  j["method"] = t.method;
  j["fresh_inputs"] = t.fresh_inputs;
  j["baselines"] = t.baselines;
  return j;
}

}  // namespace kforge::sandbox
