// Device detection and the --device choice.
#include "sandbox/device.h"

#include <cstdlib>
#include <filesystem>

namespace kforge::sandbox {

namespace fs = std::filesystem;

bool gpu_present() {
  if (const char* a = std::getenv("KFORGE_ASSUME_GPU"); a && std::string(a) == "1") return true;
  std::error_code ec;
  return fs::exists("/dev/nvidia0", ec) || fs::exists("/dev/nvidiactl", ec);
}

StatusOr<std::string> resolve_device(const std::string& requested) {
  if (requested == "cpu") return std::string("cpu");
  if (requested == "auto") return std::string(gpu_present() ? "cuda" : "cpu");
  if (requested == "cuda") {
    if (!gpu_present())
      return invalid_argument(
          "GPU evaluation needs an NVIDIA GPU and this machine has none (/dev/nvidia0 is missing); run on a "
          "machine with a GPU, or use --device cpu (where the command has it) for predicted timings");
    return std::string("cuda");
  }
  return invalid_argument("--device must be auto, cpu or cuda, not '" + requested + "'");
}

}  // namespace kforge::sandbox
