// Finding nvcc, CUDA, python3 and the kforge tree, with messages that say how to fix a miss.
#include "sandbox/toolchain.h"

#include <cstdlib>

#include "base/files.h"
#include "base/subprocess.h"

namespace kforge::sandbox {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string on_path(const std::string& program) {
  std::string path = env("PATH");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty()) {
      fs::path candidate = fs::path(dir) / program;
      std::error_code ec;
      if (fs::exists(candidate, ec) && !fs::is_directory(candidate, ec)) return candidate.string();
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

}  // namespace

StatusOr<Toolchain> find_toolchain() {
  Toolchain t;
  std::vector<std::string> candidates = {env("KFORGE_NVCC")};
  if (!env("CUDA_HOME").empty()) candidates.push_back(env("CUDA_HOME") + "/bin/nvcc");
  candidates.push_back(on_path("nvcc"));
  candidates.push_back("/usr/local/cuda/bin/nvcc");
  for (const auto& c : candidates) {
    std::error_code ec;
    if (!c.empty() && fs::exists(c, ec)) {
      t.nvcc = c;
      break;
    }
  }
  if (t.nvcc.empty()) {
    return not_found("nvcc not found: install the CUDA toolkit (13.0) or set KFORGE_NVCC to the nvcc binary");
  }
  t.cuda_home = fs::weakly_canonical(fs::path(t.nvcc)).parent_path().parent_path();
  KF_ASSIGN_OR_RETURN(ProcessResult r, run_process({t.nvcc, "--version"}, {.timeout_seconds = 60}));
  if (!r.ok()) return external_error(t.nvcc + " --version failed: " + r.output);
  auto last = r.output.find_last_of('\n', r.output.size() >= 2 ? r.output.size() - 2 : 0);
  t.nvcc_version = r.output.substr(last == std::string::npos ? 0 : last + 1);
  while (!t.nvcc_version.empty() && t.nvcc_version.back() == '\n') t.nvcc_version.pop_back();
  if (!env("KFORGE_ARCH").empty()) t.arch = env("KFORGE_ARCH");
  std::string compute = "compute_" + t.arch.substr(3);
  t.compile_flags = {"-std=c++17",      "-O3",   "-gencode", "arch=" + compute + ",code=" + t.arch,
                     "-Xcompiler",      "-fPIC", "-Xptxas",  "-warn-spills",
                     "--resource-usage"};
  return t;
}

std::string python_executable() {
  static const std::string chosen = [] {
    std::string p = env("KFORGE_PYTHON");
    if (!p.empty()) return p;
    // The project's environment (scripts/setup.sh: .venv with python/requirements/*.txt, torch from PyPI),
    // else the first python3 that has torch (a pyenv python3 on PATH may lack torch).
    std::string venv;
    if (auto home = kforge_home(); home.is_ok()) venv = (*home / ".venv" / "bin" / "python").string();
    for (std::string c : {venv, on_path("python3"), std::string("/usr/bin/python3"), on_path("python")}) {
      if (c.empty()) continue;
      auto r = run_process({c, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"},
                           {.timeout_seconds = 30});
      if (r.is_ok() && r->ok()) return c;
    }
    return std::string("python3");
  }();
  return chosen;
}

}  // namespace kforge::sandbox
