// Fingerprints (FNV-1a 64 of each normalized subtree) and the Dice coefficient of two of them.
#include "synth/similarity.h"

#include <algorithm>

namespace kforge::synth {

namespace {

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

StatusOr<Fingerprint> fingerprint_from_json(const Json& features) {
  if (!features.is_array()) return invalid_argument("AST features are not a list");
  Fingerprint fp;
  fp.reserve(features.size());
  for (const auto& f : features) {
    if (!f.is_string()) return invalid_argument("an AST feature is not a string");
    fp.push_back(fnv1a64(f.get<std::string>()));
  }
  std::sort(fp.begin(), fp.end());
  return fp;
}

double dice_similarity(const Fingerprint& a, const Fingerprint& b) {
  if (a.empty() && b.empty()) return 1.0;
  size_t i = 0;
  size_t j = 0;
  size_t common = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) {
      ++common;
      ++i;
      ++j;
    } else if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return 2.0 * static_cast<double>(common) / static_cast<double>(a.size() + b.size());
}

Nearest nearest_problem(const Fingerprint& task, const std::vector<BenchmarkProblem>& problems) {
  Nearest best;
  for (const auto& p : problems) {
    double s = dice_similarity(task, p.fingerprint);
    if (best.name.empty() || s > best.similarity) best = {p.name, s};
  }
  return best;
}

}  // namespace kforge::synth
