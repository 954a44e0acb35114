// The version of the action space: what an explore log or a policy checkpoint was made with (issue #29).
// The skill catalogue (skills::all_skills(), in order), the kernel vocabulary the schedules are written
// in (schedule/strategies.def, schedule/knobs.def) and the feature sizes the networks read
// (agent/features.h), reduced to one stable fingerprint. A file made with another fingerprint may lack
// schedules today's skills reach (a log) or read its action slots differently (a checkpoint).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace kforge::agent {

struct ActionSpaceVersion {
  std::string fingerprint;  // 12 hex digits of a hash of everything below
  std::vector<std::string> skills;
  std::vector<std::string> strategies;
  std::vector<std::string> knobs;
  int state_dim = 0;
  int action_dim = 0;
  int max_skills = 0;  // skill slots of the action features (agent::kMaxSkills)
  bool operator==(const ActionSpaceVersion&) const = default;
};

// This kforge's action space (computed once).
const ActionSpaceVersion& current_action_space();
// current_action_space().fingerprint.
const std::string& action_space_fingerprint();

// The fingerprint of a version's lists and sizes (its `fingerprint` field is not read).
std::string fingerprint_of(const ActionSpaceVersion& v);

// {"fingerprint", "skills", "strategies", "knobs", "state_dim", "action_dim", "max_skills"}.
OrderedJson action_space_to_json(const ActionSpaceVersion& v);
// Refuses a record whose fingerprint does not match its own lists (a hand-edited file).
StatusOr<ActionSpaceVersion> action_space_from_json(const Json& j);

// One line for people: "3f2a9c1b04de (17 skills, 17 strategies, 14 knobs, features 41 + 57)".
std::string describe_action_space(const ActionSpaceVersion& v);
// How `made_with` (nullopt: a file written before files carried the version) differs from this kforge's:
// "made with action space unknown (...), this kforge's is 3f2a... (...): skills added: a, b; ...".
std::string action_space_difference(const std::optional<ActionSpaceVersion>& made_with);

}  // namespace kforge::agent
