// The contamination check's measure: AST similarity of a task to benchmark problems. Python's `ast`
// turns each program's Model class into a multiset of normalized subtrees (python/kforge/synth_ast.py:
// identifiers and literals normalized, docstrings and annotations dropped); here each subtree is a
// 64-bit hash and two programs compare by the multiset Dice coefficient, 2|A n B| / (|A| + |B|):
// 1 for copies up to renaming and reordering, near 0 for unrelated code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace kforge::synth {

// A program's normalized subtrees, hashed and sorted.
using Fingerprint = std::vector<uint64_t>;

// From the worker's list of subtree strings.
StatusOr<Fingerprint> fingerprint_from_json(const Json& features);

double dice_similarity(const Fingerprint& a, const Fingerprint& b);

struct BenchmarkProblem {
  std::string name;  // "level2/1_Conv2D_ReLU_BiasAdd.py": the --against directory's name, then the path in it
  Fingerprint fingerprint;
};

struct Nearest {
  std::string name;       // empty when there are no benchmark problems
  double similarity = 0;  // the largest similarity; ties go to the first problem in name order
};
Nearest nearest_problem(const Fingerprint& task, const std::vector<BenchmarkProblem>& problems);

// The paper's threshold: a task above it is removed.
constexpr double kContaminationThreshold = 0.9;

}  // namespace kforge::synth
