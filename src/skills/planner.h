// The default planner: the first schedule (one kernel per op) improved by the skills, applied in
// the catalogue's order, each as long as it has a site (greedy, first site first).
#pragma once

#include <set>
#include <string>

#include "schedule/planner.h"
#include "skills/skill.h"

namespace kforge::skills {

struct DefaultPlanOptions {
  schedule::PlanOptions base;
  std::set<std::string> disabled;  // skill names to leave out (ablations: --disable-skill)
};

// Unknown names in `disabled` are a user error (the message lists the skills).
StatusOr<schedule::Schedule> plan_default(const ir::Graph& g, const DefaultPlanOptions& options = {});

}  // namespace kforge::skills
