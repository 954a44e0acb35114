// The seed operator library of `kforge synth`: every operator class tasks are composed from, and
// how it covers the op registry (src/ir/ops.def), with the reason for each registry op it leaves out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "synth/seed_op.h"

namespace kforge::synth {

class SeedLibrary {
 public:
  // The library, built once (its order is part of what a seed means: append, never reorder).
  static const SeedLibrary& get();

  const std::vector<SeedOp>& ops() const { return ops_; }
  const SeedOp* find(std::string_view name) const;

 private:
  SeedLibrary();
  std::vector<SeedOp> ops_;
};

// One registry op and the library classes whose import yields it; `reason` says why none does.
struct RegistryCoverage {
  std::string op;
  std::vector<std::string> classes;
  std::string reason;
};
std::vector<RegistryCoverage> registry_coverage(const SeedLibrary& lib);

// Operator classes of torch that kforge's registry cannot express, so the library leaves them out.
struct OutsideRegistry {
  std::string what;
  std::string reason;
};
const std::vector<OutsideRegistry>& classes_outside_registry();

}  // namespace kforge::synth
