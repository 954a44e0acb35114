// The kforge subcommands. Each returns a process exit code (see ExitCode).
#pragma once

#include <string>

namespace kforge::cli {

enum ExitCode {
  kExitOk = 0,
  kExitFailedResult = 1,  // the command ran, but the candidate failed (e.g. compile error)
  kExitUserError = 2,     // bad arguments or input: the message says what to fix
  kExitEnvironment = 3,   // a tool kforge needs is missing or failed (nvcc, python3, torch)
  kExitInternal = 4,      // a bug in kforge
};

struct CommonOptions {
  std::string protocol = "cuda-agent";
  int jobs = 0;
  bool json = false;
};

struct ImportArgs {
  std::string problem;
  std::string out;  // empty: stdout
  CommonOptions common;
};
int run_import(const ImportArgs& a);

struct PlanArgs {
  std::string input;  // problem .py or graph .json
  std::string out;    // empty: stdout
  std::string precision = "fp32";
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
  CommonOptions common;
};
int run_optimize(const OptimizeArgs& a);

int run_ops(bool json);

}  // namespace kforge::cli
