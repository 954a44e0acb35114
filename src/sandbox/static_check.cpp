// CUDA source rules (regular expressions over comment-free text) and the bridge to the Python checker.
#include "sandbox/static_check.h"

#include <regex>
#include <sstream>

#include "base/files.h"
#include "base/json.h"
#include "base/subprocess.h"
#include "sandbox/python.h"
#include "sandbox/toolchain.h"

namespace kforge::sandbox {

namespace fs = std::filesystem;

namespace {

struct CudaRule {
  const char* rule;
  const char* pattern;
  const char* message;
};

constexpr CudaRule kCudaRules[] = {
    {"torch_header", R"(#\s*include\s*[<"](torch|ATen|c10)/)",
     "includes torch headers (torch compute, and ~25x slower builds)"},
    {"side_stream", R"(\bcudaStreamCreate\w*\s*\()",
     "creates its own CUDA stream: work off the caller's stream escapes the timer"},
    {"side_stream", R"(\bcudaStreamBeginCapture\s*\()", "captures the caller's stream"},
    {"host_thread", R"(\bstd::(thread|jthread|async)\b|\bpthread_create\s*\()", "starts a host thread"},
    {"l2_persisting", R"(\baccessPolicyWindow\b|\bcudaLimitPersistingL2CacheSize\b)",
     "pins data in L2 across the harness's flush"},
    {"host_io", R"(\b(fopen|freopen|popen|socket|connect|dlopen)\s*\()", "opens files, sockets or libraries"},
    {"host_io", R"(\bstd::(ifstream|ofstream|fstream)\b)", "opens files"},
    {"environment", R"(\b(getenv|secure_getenv)\s*\()", "reads the environment (detecting the harness)"},
    {"process", R"(\b(fork|vfork|execv\w*|execl\w*|system)\s*\()", "starts processes"},
};

// The text with // and /* */ comments blanked (newlines kept, so line numbers hold); string
// literals are kept.
std::string without_comments(const std::string& code) {
  std::string out = code;
  size_t i = 0;
  while (i < out.size()) {
    if (out[i] == '"') {
      for (++i; i < out.size() && out[i] != '"' && out[i] != '\n'; ++i)
        if (out[i] == '\\') ++i;
      ++i;
    } else if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i)
        if (out[i] != '\n') out[i] = ' ';
    } else {
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string describe(const Finding& f) {
  return f.file + (f.line > 0 ? ":" + std::to_string(f.line) : "") + ": " + f.message;
}

std::vector<Finding> check_cuda_source(const std::string& text, const std::string& file) {
  static const std::vector<std::regex> regexes = [] {
    std::vector<std::regex> r;
    for (const auto& rule : kCudaRules) r.emplace_back(rule.pattern);
    return r;
  }();
  const std::string code = without_comments(text);
  std::vector<Finding> out;
  for (size_t k = 0; k < regexes.size(); ++k) {
    for (auto it = std::sregex_iterator(code.begin(), code.end(), regexes[k]); it != std::sregex_iterator(); ++it) {
      const auto pos = static_cast<size_t>(it->position(0));
      const int line = 1 + static_cast<int>(std::count(code.begin(), code.begin() + static_cast<long>(pos), '\n'));
      out.push_back({kCudaRules[k].rule, file, line, std::string(kCudaRules[k].message) + " (" + it->str() + ")"});
    }
  }
  std::sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.line < b.line; });
  return out;
}

StatusOr<std::vector<Finding>> check_model_new(const fs::path& candidate, const fs::path& reference) {
  KF_ASSIGN_OR_RETURN(fs::path home, kforge_home());
  std::vector<std::string> argv = {python_executable(), "-m", "kforge.static_check", candidate.string()};
  if (!reference.empty()) argv.insert(argv.end(), {"--reference", reference.string()});
  KF_ASSIGN_OR_RETURN(
      ProcessResult r,
      run_process(argv, {.timeout_seconds = 60, .extra_env = trusted_python_env((home / "python").string())}));
  if (!r.ok()) return external_error("the static checker failed (" + shell_join(argv) + "): " + r.output);
  std::string text = r.output;  // the findings are the last line
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  auto nl = text.find_last_of('\n');
  KF_ASSIGN_OR_RETURN(Json j,
                      parse_json(nl == std::string::npos ? text : text.substr(nl + 1), "the static checker's answer"));
  std::vector<Finding> out;
  for (const auto& f : j) {
    out.push_back({f.value("rule", ""), candidate.filename().string(), f.value("line", 0), f.value("message", "")});
  }
  return out;
}

}  // namespace kforge::sandbox
