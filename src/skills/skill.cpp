// The skill catalogue (docs/skills.md describes each entry for people).
#include "skills/skill.h"

#include "skills/constant_output.h"
#include "skills/fuse_elementwise.h"
#include "skills/precision.h"

namespace kforge::skills {

const std::vector<Skill>& all_skills() {
  static const std::vector<Skill> skills = {
      // Graph rewrites that hold for every input come first: they remove kernels the others would tune.
      {"constant_output",
       "writes a graph output that value ranges prove constant (e.g. clamp(min(x, 0), 0, 1) = 0) as a fill of "
       "that constant and drops the kernels that only fed it; exact for every input whose reference output has "
       "no NaN (a NaN input, or inf - inf upstream, would give NaN there and the constant here); costs nothing",
       constant_output_sites, constant_output},
      {"fuse_elementwise",
       "joins a producer chain of elementwise ops to its consumer chain when the producer's result has the "
       "consumer's shape and no one else reads it; saves one write and one read of that tensor and a launch; "
       "costs nothing (registers)",
       fuse_elementwise_sites, fuse_elementwise},
      {"tf32_contractions",
       "runs float32 cuBLAS GEMMs and attention on TF32 tensor cores (fp32 accumulate) when the protocol's "
       "tolerance is at least 1e-3; about 5-8x the fp32 rate on an H200; costs ~5e-4 relative error per product",
       tf32_contractions_sites, tf32_contractions},
      {"cudnn_fastest_engine",
       "puts a convolution on cuDNN's fastest engine (cudnnFind, TF32 allowed) instead of the engine PyTorch's "
       "reference picks, when the tolerance is at least 1e-3; costs bitwise agreement with the reference",
       cudnn_fastest_engine_sites, cudnn_fastest_engine},
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
