// Runs the importer (python/kforge/importer.py) with the shipped python package on PYTHONPATH: through
// import servers kept for the process (python/kforge/import_server.py: torch imported once, one forked
// child per problem), or as `python3 -m kforge.importer` once per problem where no server starts.
#include "sandbox/python.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "base/files.h"
#include "base/line_worker.h"
#include "base/subprocess.h"
#include "sandbox/build.h"
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

// Unique per call: threads of one process may import the same problem at once.
fs::path temp_file_for(const std::string& what, const std::string& problem_path, const std::string& ext) {
  static std::atomic<unsigned> calls{0};
  return fs::temp_directory_path() / ("kforge-" + what + "-" + std::to_string(::getpid()) + "-" +
                                      std::to_string(calls++) + "-" + content_hash(problem_path).substr(0, 8) + ext);
}

// What one run of the importer left: its exit status (or the signal that ended it) and its output.
struct ImporterRun {
  bool ok = false;
  bool timed_out = false;
  std::string output;
};

// Idle import servers, one per caller that needed one at the same time; stopped when the process ends.
class ImportServers {
 public:
  static ImportServers& instance() {
    static ImportServers servers;
    return servers;
  }
  // The importer run through a server, or nothing if no server could answer (then the caller runs the
  // importer once itself: its messages, e.g. a missing torch, are the one-shot importer's).
  std::optional<ImporterRun> run(const std::vector<std::string>& importer_args, const std::string& pythonpath,
                                 double timeout_seconds) {
    if (broken_) return std::nullopt;
    std::unique_ptr<Server> server = take(pythonpath);
    if (!server) return std::nullopt;
    const fs::path log = temp_file_for("import-log", importer_args.front(), ".txt");
    Json request = {{"argv", importer_args}, {"log", log.string()}};
    LineWorker::Reply reply = server->worker.ask(request.dump(), timeout_seconds, &server->spec);
    std::error_code ec;
    ImporterRun run;
    auto text = read_file(log);
    fs::remove(log, ec);
    if (text.is_ok()) run.output = text.value();
    if (reply.kind == LineWorker::Reply::kTimeout) {
      run.timed_out = true;  // the server and its child were killed; the next request starts a new one
      give_back(std::move(server));
      return run;
    }
    auto answer = reply.kind == LineWorker::Reply::kAnswer ? parse_json(reply.line, "the import server's answer")
                                                           : StatusOr<Json>(external_error("no answer"));
    if (!answer.is_ok() || !answer->is_object()) {
      // The server itself failed (it could not import torch or the importer): not this problem's fault.
      broken_ = true;
      server->worker.stop();
      fs::remove(server->spec.stderr_log, ec);
      return std::nullopt;
    }
    if (answer->contains("signal"))
      run.output += "\n(the importer was killed by signal " + std::to_string(answer->value("signal", 0)) + ")";
    run.ok = answer->value("exit", -1) == 0;
    give_back(std::move(server));
    return run;
  }

 private:
  struct Server {
    LineWorker worker;
    LineWorkerSpec spec;
  };

  std::unique_ptr<Server> take(const std::string& pythonpath) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        auto s = std::move(idle_.back());
        idle_.pop_back();
        return s;
      }
    }
    auto s = std::make_unique<Server>();
    s->spec.argv = {python_executable(), "-m", "kforge.import_server"};
    s->spec.env = trusted_python_env(pythonpath);
    s->spec.env.push_back("PYTHONUNBUFFERED=1");
    s->spec.stderr_log = temp_file_for("import-server", pythonpath, ".log");
    if (!s->worker.start(s->spec).is_ok()) {
      broken_ = true;
      std::error_code ec;
      fs::remove(s->spec.stderr_log, ec);
      return nullptr;
    }
    return s;
  }
  void give_back(std::unique_ptr<Server> s) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(std::move(s));
  }
  ~ImportServers() {
    for (auto& s : idle_) {
      s->worker.stop();
      std::error_code ec;
      fs::remove(s->spec.stderr_log, ec);
    }
  }

  std::mutex mu_;
  std::vector<std::unique_ptr<Server>> idle_;
  std::atomic<bool> broken_{false};
};

bool import_servers_enabled() {
  const char* v = std::getenv("KFORGE_IMPORT_SERVER");
  return !(v && std::string(v) == "0");
}

}  // namespace

StatusOr<std::string> importer_fingerprint() {
  static const StatusOr<std::string> fingerprint = []() -> StatusOr<std::string> {
    KF_ASSIGN_OR_RETURN(fs::path home, kforge_home());
    return importer_fingerprint_of(home);
  }();
  return fingerprint;
}

StatusOr<std::string> importer_fingerprint_of(const fs::path& home) {
  std::vector<fs::path> files = {home / "src/ir/ops.def"};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(home / "python/kforge", ec))
    if (e.path().extension() == ".py") files.push_back(e.path());
  if (ec) return external_error("cannot list " + (home / "python/kforge").string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    KF_ASSIGN_OR_RETURN(std::string code, read_file(f));
    text += f.filename().string() + "\n" + content_hash(code) + "\n";
  }
  return content_hash(text);
}

std::string pycache_env() {
  const char* own = std::getenv("KFORGE_PYCACHE");
  return "KFORGE_PYCACHE=" + (own ? std::string(own) : (default_cache_dir() / "pycache").string());
}

std::vector<std::string> trusted_python_env(const std::string& pythonpath) {
  return {"PYTHONPATH=" + pythonpath, "PYTHONDONTWRITEBYTECODE=1", pycache_env()};
}

StatusOr<std::string> problem_source_without_docstrings(const std::string& problem_path) {
  KF_ASSIGN_OR_RETURN(std::string pythonpath, python_path());
  const fs::path tmp = temp_file_for("source", problem_path, ".py");
  std::vector<std::string> argv = {
      python_executable(), "-m", "kforge.problem_source", fs::absolute(problem_path).string(), "-o", tmp.string()};
  KF_ASSIGN_OR_RETURN(ProcessResult r,
                      run_process(argv, {.timeout_seconds = 120, .extra_env = trusted_python_env(pythonpath)}));
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
  const std::vector<std::string> importer_args = {fs::absolute(problem_path).string(), "-o", tmp.string(), "--mode",
                                                  options.mode};
  std::vector<std::string> argv = {python_executable(), "-m", "kforge.importer"};
  argv.insert(argv.end(), importer_args.begin(), importer_args.end());
  std::optional<ImporterRun> r;
  if (import_servers_enabled()) r = ImportServers::instance().run(importer_args, pythonpath, options.timeout_seconds);
  if (!r) {
    KF_ASSIGN_OR_RETURN(ProcessResult p, run_process(argv, {.timeout_seconds = options.timeout_seconds,
                                                            .extra_env = trusted_python_env(pythonpath)}));
    r = ImporterRun{.ok = p.ok(), .timed_out = p.timed_out, .output = p.output};
  }
  if (r->timed_out)
    return external_error("importing " + problem_path + " took longer than " +
                          std::to_string(static_cast<int>(options.timeout_seconds)) + " s");
  if (!r->ok) {
    fs::remove(tmp, ec);
    std::string msg = r->output;
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
