// Which device evaluates candidates: the GPU (through the harness) when this machine has one, the
// cost model otherwise. One place for the detection that every command and the agent use.
#pragma once

#include <string>

#include "base/status.h"

namespace kforge::sandbox {

// True when this machine has an NVIDIA GPU device node. KFORGE_ASSUME_GPU=1 says yes regardless, for
// tests of the GPU paths on machines without one (with a stand-in harness, KFORGE_HARNESS_PYTHON).
bool gpu_present();

// "auto" becomes "cuda" with a GPU and "cpu" without; "cuda" without a GPU is a user error.
StatusOr<std::string> resolve_device(const std::string& requested);

}  // namespace kforge::sandbox
