// kforge catalogue: the version of this kforge's skill catalogue and action space (agent/action_space.h),
// and whether given policy checkpoints and explore logs were made with it (issue #29).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kforge::cli {

struct CatalogueArgs {
  std::vector<std::string> check;  // checkpoints (.pt) and explore logs (.jsonl) to compare with today's
  bool json = false;
};

CLI::App* add_catalogue_subcommand(CLI::App& app, CatalogueArgs& a);
// Exit 0 when every checked file matches (or none is given), 1 when one does not (each named, with the
// command that makes it again), 2 for a file that cannot be read.
int run_catalogue(const CatalogueArgs& a);

}  // namespace kforge::cli
