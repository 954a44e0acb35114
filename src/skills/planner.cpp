// plan_default: one kernel per op, then every enabled skill while it has a site.
#include "skills/planner.h"

namespace kforge::skills {

StatusOr<schedule::Schedule> plan_default(const ir::Graph& g, const DefaultPlanOptions& options) {
  for (const auto& name : options.disabled) {
    if (find_skill(name) == nullptr) {
      std::string names;
      for (const auto& s : all_skills()) names += (names.empty() ? "" : ", ") + std::string(s.name);
      return invalid_argument("unknown skill '" + name + "' (skills: " + names + ")");
    }
  }
  schedule::Schedule s = schedule::plan_one_kernel_per_op(g, options.base);
  for (const auto& skill : all_skills()) {
    if (options.disabled.count(std::string(skill.name))) continue;
    // Each application removes or changes a kernel; the bound only guards against a skill that
    // keeps finding sites it does not remove.
    for (size_t guard = 0; guard < 4 * g.nodes().size() + 4; ++guard) {
      auto sites = skill.sites(g, s);
      if (sites.empty()) break;
      KF_ASSIGN_OR_RETURN(s, skill.apply(g, s, sites.front()));
    }
  }
  KF_RETURN_IF_ERROR(schedule::check_schedule(g, s));
  return s;
}

}  // namespace kforge::skills
