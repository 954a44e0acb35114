// CUDA source units merged into one translation unit: the exported KernelBench file (load_inline compiles
// one file) and the build's chunks (one nvcc run for several kernels: nvcc's fixed cost, about 0.8 s a run,
// is most of a small kernel's build) use the same merge.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "base/status.h"

namespace kforge::codegen {

struct CudaUnit {
  std::string file;  // "k0_relu.cu": names its namespace and its banner
  std::string code;
};

// A unit split for merging: its #include lines (the runtime header's own include dropped), the macros it
// defines, and the rest. Includes inside #if blocks cannot be hoisted safely: an error.
struct UnitParts {
  std::vector<std::string> includes;
  std::vector<std::string> macros;
  std::string body;
};
StatusOr<UnitParts> split_unit(const CudaUnit& unit);

// A C identifier made of `s`: every other character becomes '_'.
std::string identifier(const std::string& s);

// Units as one translation unit's parts: the includes of all of them (first occurrence order) and their
// bodies, each in its own namespace kforge_unit_<first_index + i>_<file stem> (so their file-local names
// cannot collide; extern "C" functions keep their symbols) behind a "// ---- file ----" banner, with every
// macro a unit defines #undef'd after it unless `kept_macros` holds it. `edit` may change each unit's parts
// first (the export drops comments that say words upstream's checker refuses).
struct MergedUnits {
  std::vector<std::string> includes;
  std::string body;
};
using UnitEdit = Status (*)(UnitParts& parts, const std::string& file);
StatusOr<MergedUnits> merge_units(const std::vector<CudaUnit>& units, const std::set<std::string>& kept_macros,
                                  size_t first_index = 0, UnitEdit edit = nullptr);

}  // namespace kforge::codegen
