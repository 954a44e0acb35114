// The skill catalogue (docs/skills.md describes each entry for people).
#include "skills/skill.h"

#include "skills/fuse_elementwise.h"

namespace kforge::skills {

const std::vector<Skill>& all_skills() {
  static const std::vector<Skill> skills = {
      {"fuse_elementwise",
       "joins a producer chain of elementwise ops to its consumer chain when the producer's result has the "
       "consumer's shape and no one else reads it; saves one write and one read of that tensor and a launch; "
       "costs nothing (registers)",
       fuse_elementwise_sites, fuse_elementwise},
  };
  return skills;
}

const Skill* find_skill(std::string_view name) {
  for (const auto& s : all_skills()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace kforge::skills
