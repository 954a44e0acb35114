// Runs `python3 -m kforge.importer` with the shipped python package on PYTHONPATH.
#include "sandbox/python.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/files.h"
#include "base/subprocess.h"
#include "sandbox/toolchain.h"

namespace kforge::sandbox {

namespace fs = std::filesystem;

namespace {

StatusOr<std::string> python_path() {
  KF_ASSIGN_OR_RETURN(fs::path home, kforge_home());
  std::string pythonpath = (home / "python").string();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pythonpath += std::string(":") + old;
  return pythonpath;
}

fs::path temp_file_for(const std::string& what, const std::string& problem_path, const std::string& ext) {
  return fs::temp_directory_path() /
         ("kforge-" + what + "-" + std::to_string(::getpid()) + "-" + content_hash(problem_path).substr(0, 8) + ext);
}

}  // namespace

StatusOr<std::string> problem_source_without_docstrings(const std::string& problem_path) {
  KF_ASSIGN_OR_RETURN(std::string pythonpath, python_path());
  const fs::path tmp = temp_file_for("source", problem_path, ".py");
  std::vector<std::string> argv = {
      python_executable(), "-m", "kforge.problem_source", fs::absolute(problem_path).string(), "-o", tmp.string()};
  KF_ASSIGN_OR_RETURN(ProcessResult r,
                      run_process(argv, {.timeout_seconds = 120,
                                         .extra_env = {"PYTHONPATH=" + pythonpath, "PYTHONDONTWRITEBYTECODE=1"}}));
  std::error_code ec;
  if (!r.ok()) {
    fs::remove(tmp, ec);
    return external_error("removing the docstrings of " + problem_path + " failed (" + shell_join(argv) + "):\n" +
                          r.output);
  }
  auto text = read_file(tmp);
  fs::remove(tmp, ec);
  return text;
}

StatusOr<Json> run_importer(const std::string& problem_path, const ImportOptions& options) {
  std::error_code ec;
  if (!fs::exists(problem_path, ec)) return not_found("no such problem file: " + problem_path);
  KF_ASSIGN_OR_RETURN(std::string pythonpath, python_path());
  const fs::path tmp = temp_file_for("import", problem_path, ".json");
  std::vector<std::string> argv = {
      python_executable(), "-m",     "kforge.importer", fs::absolute(problem_path).string(), "-o",
      tmp.string(),        "--mode", options.mode};
  KF_ASSIGN_OR_RETURN(ProcessResult r,
                      run_process(argv, {.timeout_seconds = options.timeout_seconds,
                                         .extra_env = {"PYTHONPATH=" + pythonpath, "PYTHONDONTWRITEBYTECODE=1"}}));
  if (r.timed_out)
    return external_error("importing " + problem_path + " took longer than " +
                          std::to_string(static_cast<int>(options.timeout_seconds)) + " s");
  if (!r.ok()) {
    fs::remove(tmp, ec);
    std::string msg = r.output;
    // The importer prints "kforge import: error: ..." for user errors; pass that line on as it is.
    auto pos = msg.rfind("kforge import: error: ");
    if (pos != std::string::npos) {
      std::string line = msg.substr(pos + 22);
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      return invalid_argument(line);
    }
    if (msg.find("No module named 'torch'") != std::string::npos) {
      return external_error(
          "the importer needs PyTorch: install it (Debian: apt-get install python3-torch) or set KFORGE_PYTHON to a "
          "python3 that has torch");
    }
    return external_error("the importer failed (" + shell_join(argv) + "):\n" + msg);
  }
  auto text = read_file(tmp);
  fs::remove(tmp, ec);
  if (!text.is_ok()) return text.status();
  return parse_json(text.value(), "the importer's output for " + problem_path);
}

}  // namespace kforge::sandbox
