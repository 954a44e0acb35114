// The kforge subcommands. Each returns a process exit code (see ExitCode).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "sandbox/protocol.h"
#include "skills/planner.h"

namespace kforge::cli {

enum ExitCode {
  kExitOk = 0,
  kExitFailedResult = 1,  // the command ran, but the candidate failed (e.g. compile error)
  kExitUserError = 2,     // bad arguments or input: the message says what to fix
  kExitEnvironment = 3,   // a tool kforge needs is missing or failed (nvcc, python3, torch)
  kExitInternal = 4,      // a bug in kforge
};

// Prints "kforge COMMAND: error: ..." and returns the exit code of the Status's kind: bad input 2,
// a missing or failing tool 3, anything else (a bug) 4.
int report_error(const Status& s, const char* command);

// Writes `text` to `out`, or to stdout when `out` is empty or "-".
Status write_or_print(const std::string& out, const std::string& text);

// "a,b,,c" -> {a, b, c}: the comma-separated lists of --only and --levels.
std::set<std::string> split_list(const std::string& s);

struct CommonOptions {
  std::string protocol = "cuda-agent";
  int jobs = 0;
  bool json = false;
  std::vector<std::string> disabled_skills;  // --disable-skill NAME (ablations)
  sandbox::Timing timing;                    // --timing, --fresh-inputs, --baselines (commands that time)
};

// The default planner's options from the common flags.
// An explicit precision ("fp32", "tf32", "3xtf32") is kept as given: the precision skills stay out.
skills::DefaultPlanOptions plan_options(const CommonOptions& c, const std::string& precision = "");

struct ImportArgs {
  std::string problem;
  std::string out;  // empty: stdout
  CommonOptions common;
};
int run_import(const ImportArgs& a);

struct PlanArgs {
  std::string input;      // problem .py or graph .json
  std::string out;        // empty: stdout
  std::string precision;  // empty: fp32, and the precision skills decide
  CommonOptions common;
};
int run_plan(const PlanArgs& a);

struct BuildArgs {
  std::string input;     // problem .py or graph .json
  std::string schedule;  // optional schedule .json
  std::string out_dir;
  bool force = false;
  CommonOptions common;
};
int run_build(const BuildArgs& a);

struct OptimizeArgs {
  std::string problem;
  std::string out_dir;  // default out/<name>
  std::string device = "auto";
  bool force = false;
  int trials = 30;         // timed trials per variant on the GPU
  std::string policy;      // the agent's policy: learned, heuristic, search, random; empty: default
  int turns = 200;         // the agent's turns, at most
  std::string checkpoint;  // a `kforge train` checkpoint: the learned policy instead of `policy`
  std::string correction;  // a `kforge costmodel fit --out` file: the cost model with it (cpu)
  bool planned = false;    // plan on the cost model; the device judges the first schedule and the end
  std::string bundle;      // write the audit bundle (cli/bundle.h) here, a .tar.gz
  CommonOptions common;
};
int run_optimize(const OptimizeArgs& a);

struct ExportArgs {
  std::string input;     // an optimize/build output directory, a problem .py or a graph .json
  std::string schedule;  // optional schedule .json (default: the directory's, or plan afresh)
  std::string format = "kernelbench";
  std::string out = "-";            // "-": stdout
  bool force = false;               // overwrite an existing output file
  bool allow_library_only = false;  // write a program without a __global__ kernel of its own anyway
  CommonOptions common;
};
int run_export(const ExportArgs& a);

struct KernelbenchFile;
// `kforge export --format cuda-agent`: the program as a CUDA-Agent workspace in `dir` (SKILL.md, model.py,
// model_new.py, kernels/, the protected evaluator), written by python -m kforge.llm_agent workspace so that
// the agent and the export make one layout.
Status write_cuda_agent_workspace(const KernelbenchFile& file, const std::string& dir, const std::string& protocol,
                                  bool force);

// The program of `input` (an optimize/build output directory, a problem .py or a graph .json) as one
// KernelBench ModelNew file, as `kforge export --format kernelbench` writes it.
struct KernelbenchFile {
  std::string text;
  std::string note;  // what was changed so that upstream's checker reads the source (empty: nothing)
  size_t kernels = 0;
  std::string problem_path;  // the problem the graph was traced from
};
StatusOr<KernelbenchFile> kernelbench_file(const std::string& input, const std::string& schedule,
                                           const sandbox::Protocol& protocol, const CommonOptions& common,
                                           bool allow_library_only);

struct EvaluateArgs {
  std::string problem;    // the KernelBench-format reference
  std::string candidate;  // a ModelNew file: kforge's model_new.py, an export, or hand-written
  int trials = 30;
  bool profile = true;
  double timeout = 300;
  bool static_check = true;             // --no-static-check: only the runtime checks (for testing them)
  bool static_only = false;             // --static-only: the static checks alone, on any machine (no GPU needed)
  std::vector<std::string> cuda_files;  // --cuda FILE: CUDA sources checked with the candidate's rules
  CommonOptions common;
};
int run_evaluate(const EvaluateArgs& a);

struct BenchArgs {
  std::string suite;     // a directory of problems, or of level*/ directories of problems
  std::string out_dir;   // default out/bench-<suite>-<protocol>
  std::string json_out;  // also write the JSON report here
  std::string device = "auto";
  std::string levels;  // comma-separated level directories (default: all)
  std::string only;    // comma-separated problem stems (default: all)
  int trials = 30;
  int workers = 4;        // parallel verification workers sharing the GPU
  bool profile = true;    // time the correct candidates against eager and torch.compile
  double time_limit = 0;  // seconds; past it no new problem is started (0: none)
  bool resume = false;    // continue the run in out_dir: problems that have results are not redone
  bool force = false;
  std::string db;      // record every measured candidate in this measurement database (SQLite)
  std::string bundle;  // write the audit bundle (cli/bundle.h) here, a .tar.gz
  CommonOptions common;
};
int run_bench(const BenchArgs& a);

struct SelftestArgs {
  bool gpu = false;      // also run the runtime fixtures through the GPU harness
  std::string json_out;  // write the verdicts here
  std::string fixtures;  // default: <kforge tree>/tests/threats
};
int run_selftest(const SelftestArgs& a);

int run_ops(bool json);
// `kforge skills`: the skill catalogue in planner order (--names: one name per line, for scripts).
int run_skills(bool json, bool names_only);

}  // namespace kforge::cli
