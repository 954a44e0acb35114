// The measurement protocol, defined once: how a candidate is verified (protocols.def: model mode,
// tolerances, input sets) and how it is timed (timing_methods.def, baselines.def). The CLI resolves
// names here, the agent reads tolerances and modes here, and every request to the GPU harness carries
// the whole object (protocol_to_json, timing_to_json): the harness applies what it is sent.
#pragma once
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace kforge::sandbox {

struct Protocol {
  std::string name = "cuda-agent";  // a name of protocols.def
  std::string mode = "eval";        // the models' mode: "eval" or "train"
  double atol = 1e-2, rtol = 1e-2;  // torch.allclose's, per output
  int input_sets = 5;               // fresh random input sets verified
};

// The protocol of that name, or an error naming the known ones.
StatusOr<Protocol> protocol_named(const std::string& name);
std::vector<std::string> protocol_names();
// One line for --protocol's help: every protocol with what it is.
std::string protocol_help();
OrderedJson protocol_to_json(const Protocol& p);

struct Timing {
  std::string method = "events";  // a name of timing_methods.def
  bool fresh_inputs = false;      // a different input set on every timed call (defeats output caching)
  std::vector<std::string> baselines = {"eager", "compile", "compile_tf32"};  // names of baselines.def
};

std::vector<std::string> timing_method_names();
std::string timing_method_help();
std::vector<std::string> baseline_names();
std::string baseline_help();
// Checks the method and every baseline name (no duplicates); the error says which are known.
Status check_timing(const Timing& t);
// "a,b,c" -> {"a", "b", "c"} (spaces trimmed, empty parts an error).
StatusOr<std::vector<std::string>> parse_baselines(const std::string& list);
OrderedJson timing_to_json(const Timing& t);

}  // namespace kforge::sandbox
