// Runs `python3 -m kforge.report JSON -o HTML` after a command has written its JSON.
#include "cli/html_report.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "base/files.h"
#include "base/subprocess.h"
#include "sandbox/python.h"
#include "sandbox/toolchain.h"

namespace kforge::cli {

namespace fs = std::filesystem;

void write_html_report(const fs::path& json, const fs::path& html, const char* command) {
  if (const char* v = std::getenv("KFORGE_HTML_REPORT"); v && std::string(v) == "0") return;
  auto home = kforge_home();
  if (!home.is_ok()) {
    std::fprintf(stderr, "kforge %s: warning: no HTML report: %s\n", command, home.status().message().c_str());
    return;
  }
  std::string pythonpath = (*home / "python").string();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pythonpath += std::string(":") + old;
  auto r = run_process({sandbox::python_executable(), "-m", "kforge.report", fs::absolute(json).string(), "-o",
                        fs::absolute(html).string()},
                       {.timeout_seconds = 300, .extra_env = sandbox::trusted_python_env(pythonpath)});
  if (!r.is_ok()) {
    std::fprintf(stderr, "kforge %s: warning: no HTML report: %s\n", command, r.status().message().c_str());
    return;
  }
  if (r->exit_code == 3) {
    std::fprintf(stderr,
                 "kforge %s: warning: %s has tables only: matplotlib is missing (pip install -r "
                 "python/requirements/frontdoor.txt)\n",
                 command, html.c_str());
    return;
  }
  if (!r->ok()) {
    std::string out = r->output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    std::fprintf(stderr, "kforge %s: warning: no HTML report (the JSON is complete): %s\n", command,
                 out.substr(out.size() > 400 ? out.size() - 400 : 0).c_str());
    return;
  }
  std::fprintf(stderr, "wrote %s\n", html.c_str());
}

}  // namespace kforge::cli
