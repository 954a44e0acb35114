// kforge synth: not built yet (issue #6); says so.
#include "cli/synth_command.h"

#include <cstdio>

#include "cli/commands.h"

namespace kforge::cli {

int run_synth(const SynthArgs& a) {
  (void)a;
  std::fprintf(stderr, "kforge synth: error: task synthesis is not part of this build yet (issue #6)\n");
  return kExitUserError;
}

}  // namespace kforge::cli
