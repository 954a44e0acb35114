// kforge synth: training tasks made the CUDA Agent paper's way (issue #6); see src/synth/run.h.
#include "cli/synth_command.h"

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "synth/run.h"

namespace kforge::cli {

int run_synth(const SynthArgs& a) {
  synth::SynthOptions o;
  o.count = a.count;
  o.seed = a.seed;
  o.out = a.out;
  for (const auto& d : a.against) o.against.emplace_back(d);
  o.max_ops = a.max_ops;
  o.jobs = a.jobs;
  o.resume = a.resume;
  o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  auto summary = synth::run_synth(o);
  if (!summary.is_ok()) {
    return report_error(summary.status(), "synth");
  }
  if (a.json) {
    std::cout << summary->report.dump(2) << "\n";
  } else {
    std::cout << summary->report_text;
  }
  return kExitOk;
}

}  // namespace kforge::cli
