// Seeded draws with fixed definitions (see rng.h).
#include "synth/rng.h"

#include <cmath>

namespace kforge::synth {

uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  KF_CHECK(lo <= hi) << "uniform_int(" << lo << ", " << hi << ")";
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  if (span == 0) return static_cast<int64_t>(bits());  // the whole 64-bit range
  const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  uint64_t r = bits();
  while (r >= limit) r = bits();
  return lo + static_cast<int64_t>(r % span);
}

double Rng::log_uniform(double lo, double hi) {
  return std::exp(std::log(lo) + uniform01() * (std::log(hi) - std::log(lo)));
}

size_t Rng::weighted(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  KF_CHECK(total > 0) << "weighted draw without a positive weight";
  double r = uniform01() * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (r < weights[i]) return i;
    r -= weights[i];
  }
  for (size_t i = weights.size(); i-- > 0;) {
    if (weights[i] > 0) return i;
  }
  return 0;
}

}  // namespace kforge::synth
