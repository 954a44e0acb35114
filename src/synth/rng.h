// The random source of task synthesis: a seeded std::mt19937_64 with draws defined here, bit for bit,
// so that the same seed gives the same dataset with any standard library (std's distributions are
// implementation-defined).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "base/check.h"

namespace kforge::synth {

// SplitMix64: derives independent seeds (one per candidate task) from the run's seed.
uint64_t mix_seed(uint64_t seed, uint64_t stream);

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  uint64_t bits() { return engine_(); }
  // Uniform in [lo, hi], both included (rejection sampling: no modulo bias).
  int64_t uniform_int(int64_t lo, int64_t hi);
  // Uniform in [0, 1).
  double uniform01() { return static_cast<double>(bits() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return uniform01() < p; }
  // Log-uniform in [lo, hi).
  double log_uniform(double lo, double hi);
  // An index drawn with the given non-negative weights (at least one positive).
  size_t weighted(const std::vector<double>& weights);

  template <typename T>
  const T& pick(const std::vector<T>& items) {
    KF_CHECK(!items.empty()) << "pick from an empty list";
    return items[static_cast<size_t>(uniform_int(0, static_cast<int64_t>(items.size()) - 1))];
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace kforge::synth
