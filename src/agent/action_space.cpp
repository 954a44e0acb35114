// The action space's version (action_space.h).
#include "agent/action_space.h"

#include <algorithm>
#include <set>

#include "agent/features.h"
#include "base/files.h"
#include "schedule/catalogue.h"
#include "skills/skill.h"

namespace kforge::agent {

namespace {

// The canonical text the fingerprint hashes: one field a line, list entries in order.
std::string canonical_text(const ActionSpaceVersion& v) {
  std::string text = "kforge.action_space/1\n";
  auto list = [&](const char* what, const std::vector<std::string>& names) {
    text += what;
    for (const auto& n : names) text += " " + n;
    text += "\n";
  };
  list("skills", v.skills);
  list("strategies", v.strategies);
  list("knobs", v.knobs);
  text += "features " + std::to_string(v.state_dim) + " " + std::to_string(v.action_dim) + " " +
          std::to_string(v.max_skills) + "\n";
  return text;
}

ActionSpaceVersion compute_current() {
  ActionSpaceVersion v;
  for (const auto& s : skills::all_skills()) v.skills.emplace_back(s.name);
  for (size_t i = 0; i < schedule::kNumStrategies; ++i)
    v.strategies.emplace_back(schedule::strategy_name(static_cast<schedule::Strategy>(i)));
  for (size_t i = 0; i < schedule::kNumKnobs; ++i)
    v.knobs.emplace_back(schedule::knob_name(static_cast<schedule::Knob>(i)));
  v.state_dim = kStateDim;
  v.action_dim = kActionDim;
  v.max_skills = kMaxSkills;
  v.fingerprint = fingerprint_of(v);
  return v;
}

// "added: a, b; removed: c" for one list (empty when the same set; "reordered" when only the order moved).
std::string list_change(const char* what, const std::vector<std::string>& before, const std::vector<std::string>& now) {
  if (before == now) return "";
  const std::set<std::string> b(before.begin(), before.end()), n(now.begin(), now.end());
  std::string added, removed;
  for (const auto& x : now)
    if (!b.count(x)) added += (added.empty() ? "" : ", ") + x;
  for (const auto& x : before)
    if (!n.count(x)) removed += (removed.empty() ? "" : ", ") + x;
  std::string out;
  if (!added.empty()) out += std::string(what) + " added: " + added;
  if (!removed.empty()) out += (out.empty() ? "" : "; ") + std::string(what) + " removed: " + removed;
  if (out.empty()) out = std::string(what) + " reordered";
  return out;
}

}  // namespace

std::string fingerprint_of(const ActionSpaceVersion& v) {
  return content_hash(canonical_text(v)).substr(0, 12);
}

const ActionSpaceVersion& current_action_space() {
  static const ActionSpaceVersion current = compute_current();
  return current;
}

const std::string& action_space_fingerprint() {
  return current_action_space().fingerprint;
}

OrderedJson action_space_to_json(const ActionSpaceVersion& v) {
  OrderedJson j;
  j["fingerprint"] = v.fingerprint;
  j["skills"] = v.skills;
  j["strategies"] = v.strategies;
  j["knobs"] = v.knobs;
  j["state_dim"] = v.state_dim;
  j["action_dim"] = v.action_dim;
  j["max_skills"] = v.max_skills;
  return j;
}

StatusOr<ActionSpaceVersion> action_space_from_json(const Json& j) {
  ActionSpaceVersion v;
  try {
    v.fingerprint = j.at("fingerprint").get<std::string>();
    v.skills = j.at("skills").get<std::vector<std::string>>();
    v.strategies = j.at("strategies").get<std::vector<std::string>>();
    v.knobs = j.at("knobs").get<std::vector<std::string>>();
    v.state_dim = j.at("state_dim").get<int>();
    v.action_dim = j.at("action_dim").get<int>();
    v.max_skills = j.at("max_skills").get<int>();
  } catch (const Json::exception& e) {
    return invalid_argument(std::string("not an action-space record (") + e.what() + ")");
  }
  if (fingerprint_of(v) != v.fingerprint) {
    return invalid_argument("an action-space record whose fingerprint " + v.fingerprint +
                            " does not match its own lists (" + fingerprint_of(v) + "): the file was edited");
  }
  return v;
}

std::string describe_action_space(const ActionSpaceVersion& v) {
  return v.fingerprint + " (" + std::to_string(v.skills.size()) + " skills, " + std::to_string(v.strategies.size()) +
         " strategies, " + std::to_string(v.knobs.size()) + " knobs, features " + std::to_string(v.state_dim) + " + " +
         std::to_string(v.action_dim) + ")";
}

std::string action_space_difference(const std::optional<ActionSpaceVersion>& made_with) {
  const ActionSpaceVersion& now = current_action_space();
  if (!made_with) {
    return "made with action space unknown (written before kforge recorded it), this kforge's is " +
           describe_action_space(now);
  }
  std::string text = "made with action space " + describe_action_space(*made_with) + ", this kforge's is " +
                     describe_action_space(now);
  std::string changes;
  for (const auto& c : {list_change("skills", made_with->skills, now.skills),
                        list_change("strategies", made_with->strategies, now.strategies),
                        list_change("knobs", made_with->knobs, now.knobs)}) {
    if (!c.empty()) changes += (changes.empty() ? "" : "; ") + c;
  }
  if (made_with->state_dim != now.state_dim || made_with->action_dim != now.action_dim ||
      made_with->max_skills != now.max_skills) {
    changes += std::string(changes.empty() ? "" : "; ") + "feature sizes " + std::to_string(made_with->state_dim) +
               " + " + std::to_string(made_with->action_dim) + " -> " + std::to_string(now.state_dim) + " + " +
               std::to_string(now.action_dim);
  }
  if (!changes.empty()) text += " (" + changes + ")";
  return text;
}

}  // namespace kforge::agent
