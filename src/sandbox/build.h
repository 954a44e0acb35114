// Builds a program with nvcc: every .cu compiled in parallel, objects and libraries cached by
// content hash, compiler failures returned as data with the compiler's messages.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "codegen/program.h"
#include "sandbox/toolchain.h"

namespace kforge::sandbox {

struct ResourceUsage {
  std::string kernel;  // mangled device function name
  int registers = 0;
  int spill_stores = 0;  // bytes
  int spill_loads = 0;
  int shared_bytes = 0;  // static shared memory
};

struct CompileRecord {
  std::string file;  // "k3_conv.cu"
  bool ok = false;
  bool cached = false;
  double seconds = 0.0;
  std::string log;  // nvcc's output (errors, warnings, resource usage)
  std::vector<ResourceUsage> resources;
};

struct BuildResult {
  bool ok = false;
  std::string outcome;            // "ok", "compile_error", or "forbidden" (a static check refused a unit)
  std::string message;            // first error, for tables
  std::filesystem::path library;  // the built shared library (copied into the output dir)
  std::vector<CompileRecord> compiles;
  bool link_cached = false;
  double seconds = 0.0;
  int cache_hits = 0;
  int units_compiled = 0;     // nvcc runs that missed the cache (chunks, entry, runtime units)
  double nvcc_seconds = 0.0;  // their run times added up: the core-seconds compiling took
  double link_seconds = 0.0;  // the link, when the library was not cached
};

struct BuildOptions {
  std::filesystem::path out_dir;    // sources go to out_dir/kernels, the library to out_dir/<library_name>
  std::string library_name;         // "libkforge_19_ReLU.so"
  std::filesystem::path cache_dir;  // empty: $KFORGE_CACHE or ~/.cache/kforge
  int jobs = 0;                     // 0: number of cores
};

// At most `n` nvcc processes at once across every build_program of this process (0: no limit, the default).
// Builds running side by side (bench builds many problems at once) then each use all their jobs and share
// the machine as make's jobserver does: a large network's units are not compiled one after another while
// the other builders are done.
void set_process_nvcc_limit(int n);

// Writes the program's sources and builds the library. Status errors are kforge's own failures
// (no nvcc, cannot write files); a compile error is a BuildResult with ok = false.
StatusOr<BuildResult> build_program(const codegen::Program& program, const Toolchain& tc, const BuildOptions& options);

// Parses `--resource-usage` / ptxas lines: registers, spills and shared memory per kernel.
std::vector<ResourceUsage> parse_resource_usage(const std::string& log);

std::filesystem::path default_cache_dir();

}  // namespace kforge::sandbox
