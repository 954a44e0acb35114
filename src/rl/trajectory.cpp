// Trajectory storage (JSONL) and the rejection fine-tuning filter (trajectory.h).
#include "rl/trajectory.h"

#include <fstream>
#include <map>
#include <sstream>

namespace kforge::rl {

OrderedJson trajectory_to_json(const Trajectory& t) {
  OrderedJson j;
  j["task"] = t.task;
  j["seed"] = t.seed;
  j["reward"] = t.reward;
  j["faster_than_compile"] = t.faster_than_compile;
  j["evaluations"] = t.evaluations;
  OrderedJson steps = OrderedJson::array();
  for (size_t i = 0; i < t.decisions.size(); ++i) {
    const Decision& d = t.decisions[i];
    OrderedJson s;
    s["state"] = d.state;
    s["actions"] = d.actions;
    s["chosen"] = d.chosen;
    s["action"] = i < t.action_names.size() ? t.action_names[i] : "";
    s["outcome"] = i < t.outcomes.size() ? t.outcomes[i] : "";
    s["schedule"] = i < t.schedules.size() ? t.schedules[i] : "";
    steps.push_back(std::move(s));
  }
  j["steps"] = std::move(steps);
  return j;
}

StatusOr<Trajectory> trajectory_from_json(const Json& j) {
  try {
    Trajectory t;
    t.task = j.at("task").get<std::string>();
    t.seed = j.at("seed").get<uint64_t>();
    t.reward = j.at("reward").get<double>();
    t.faster_than_compile = j.at("faster_than_compile").get<bool>();
    t.evaluations = j.at("evaluations").get<int>();
    for (const auto& s : j.at("steps")) {
      Decision d;
      d.state = s.at("state").get<std::vector<float>>();
      d.actions = s.at("actions").get<std::vector<std::vector<float>>>();
      d.chosen = s.at("chosen").get<int>();
      if (d.chosen < 0 || d.chosen >= static_cast<int>(d.actions.size())) {
        return invalid_argument("a step chose action " + std::to_string(d.chosen) + " of " +
                                std::to_string(d.actions.size()));
      }
      t.decisions.push_back(std::move(d));
      t.action_names.push_back(s.at("action").get<std::string>());
      t.outcomes.push_back(s.at("outcome").get<std::string>());
      t.schedules.push_back(s.at("schedule").get<std::string>());
    }
    return t;
  } catch (const Json::exception& e) {
    return invalid_argument(std::string("not a trajectory: ") + e.what());
  }
}

StatusOr<std::vector<Trajectory>> read_trajectories(const std::string& path, int64_t* complete_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read trajectories from " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  std::vector<Trajectory> out;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;  // torn last line: a kill while writing
    ++line_no;
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    auto j = parse_json(line, path + ":" + std::to_string(line_no));
    if (!j.is_ok()) return j.status();
    auto t = trajectory_from_json(*j);
    if (!t.is_ok()) return t.status().with_context(path + ":" + std::to_string(line_no));
    out.push_back(std::move(*t));
  }
  if (complete_bytes) *complete_bytes = static_cast<int64_t>(pos);
  return out;
}

std::vector<const Decision*> rft_filter(const std::vector<Trajectory>& trajectories, RftFilterStats* stats) {
  RftFilterStats local;
  std::vector<const Decision*> kept;
  for (const Trajectory& t : trajectories) {
    ++local.episodes;
    local.decisions += static_cast<int>(t.decisions.size());
    if (t.reward <= 0) continue;
    ++local.kept_episodes;
    size_t n = t.decisions.size();
    std::vector<bool> loop(n, false);
    // Decision i was taken on schedules[i]; the step it chose led to schedules[i + 1]. A schedule seen
    // again at j means the decisions first_seen .. j - 1 went round in a circle.
    std::map<std::string, size_t> first_seen;
    for (size_t j = 0; j < n && j < t.schedules.size(); ++j) {
      auto [it, inserted] = first_seen.emplace(t.schedules[j], j);
      if (inserted || t.schedules[j].empty()) continue;
      for (size_t k = it->second; k < j; ++k) loop[k] = true;
    }
    for (size_t i = 0; i < n; ++i) {
      if (loop[i]) {
        ++local.dropped_loops;
        continue;
      }
      if (i < t.outcomes.size() && !t.outcomes[i].empty() && t.outcomes[i] != "ok") {
        ++local.dropped_invalid;
        continue;
      }
      kept.push_back(&t.decisions[i]);
    }
  }
  local.kept_decisions = static_cast<int>(kept.size());
  if (stats) *stats = local;
  return kept;
}

}  // namespace kforge::rl
