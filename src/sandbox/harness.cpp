// HarnessWorker: starts, feeds, watches and replaces the python harness worker process.
#include "sandbox/harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "base/files.h"
#include "sandbox/build.h"
#include "sandbox/toolchain.h"

namespace kforge::sandbox {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::optional<double> number_or_null(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

namespace {

EvalResult result_from_harness_fields(const Json& j, const std::string& protocol) {
  EvalResult r;
  r.predicted = false;
  r.protocol = j.value("protocol", protocol);
  r.device = j.value("device", "");
  r.torch_version = j.value("torch", "");
  r.message = j.value("message", "");
  std::string outcome = j.value("outcome", "");
  auto parsed = outcome_from_name(outcome);
  if (parsed) {
    r.outcome = *parsed;
  } else {
    r.outcome = Outcome::kRuntimeFault;
    r.message = "the harness answered an unknown outcome '" + outcome + "': " + r.message;
  }
  r.max_abs_err = number_or_null(j, "max_abs_err");
  r.max_rel_err = number_or_null(j, "max_rel_err");
  r.t_candidate = number_or_null(j, "t_candidate");
  r.t_eager = number_or_null(j, "t_eager");
  r.t_compile = number_or_null(j, "t_compile");
  r.t_candidate_repeat = number_or_null(j, "t_candidate_repeat");
  r.t_eager_repeat = number_or_null(j, "t_eager_repeat");
  r.t_candidate_wall = number_or_null(j, "t_candidate_wall");
  r.samples = j.value("samples", 0);
  if (j.contains("profile_error") && j["profile_error"].is_string())
    r.message += (r.message.empty() ? "" : "; ") + std::string("profile: ") + j["profile_error"].get<std::string>();
  return r;
}

}  // namespace

EvalResult result_from_harness_json(const Json& j, const std::string& protocol) {
  try {
    return result_from_harness_fields(j, protocol);
  } catch (const Json::exception& e) {
    EvalResult r;
    r.predicted = false;
    r.protocol = protocol;
    r.outcome = Outcome::kRuntimeFault;
    r.message = std::string("the harness's answer is malformed: ") + e.what();
    return r;
  }
}

HarnessWorker::HarnessWorker(HarnessOptions options) : options_(std::move(options)) {
  if (options_.python.empty()) {
    const char* h = std::getenv("KFORGE_HARNESS_PYTHON");
    options_.python = h && *h ? h : python_executable();
  }
}

HarnessWorker::~HarnessWorker() {
  stop();
}

Status HarnessWorker::start() {
  KF_ASSIGN_OR_RETURN(fs::path home, kforge_home());
  if (options_.python.find('/') != std::string::npos && ::access(options_.python.c_str(), X_OK) != 0) {
    return external_error("the harness needs a python3 with torch, and " + options_.python +
                          " is not an executable: set KFORGE_PYTHON (or KFORGE_HARNESS_PYTHON)");
  }
  ::signal(SIGPIPE, SIG_IGN);  // a worker that dies mid-request must not kill the supervisor
  int to[2];
  int from[2];
  if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0)
    return external_error(std::string("cannot create a pipe for the harness: ") + std::strerror(errno));
  stderr_log_ = fs::temp_directory_path() /
                ("kforge-harness-" + std::to_string(::getpid()) + "-" + std::to_string(starts_) + ".log");
  std::string pythonpath = (home / "python").string();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) pythonpath += std::string(":") + old;
  std::vector<std::string> env = {"PYTHONPATH=" + pythonpath, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"};
  scratch_ =
      fs::temp_directory_path() / ("kforge-worker-" + std::to_string(::getpid()) + "-" + std::to_string(starts_));
  KF_ASSIGN_OR_RETURN(isolation_, prepare_isolation({.mode = options_.isolation,
                                                     .scratch = scratch_,
                                                     .shared_cache = default_cache_dir() / "torch"}));
  env.insert(env.end(), isolation_.env.begin(), isolation_.env.end());
  env.insert(env.end(), options_.extra_env.begin(), options_.extra_env.end());
  std::vector<std::string> argv = isolation_.argv_prefix;
  for (const char* a : {"-m", "kforge.harness", "--serve"}) {
    if (argv.size() == isolation_.argv_prefix.size()) argv.push_back(options_.python);
    argv.push_back(a);
  }
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const std::string log = stderr_log_.string();
  pid_t pid = ::fork();
  if (pid < 0) return external_error(std::string("cannot fork the harness: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(to[0], 0);
    ::dup2(from[1], 1);
    int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) ::dup2(err, 2);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    join_cgroup_in_child(isolation_);
    ::execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  pid_ = pid;
  to_worker_ = to[1];
  from_worker_ = from[0];
  pending_.clear();
  ++starts_;
  return Status::ok();
}

void HarnessWorker::stop() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (to_worker_ >= 0) ::close(to_worker_);
  if (from_worker_ >= 0) ::close(from_worker_);
  if (!scratch_.empty()) release_isolation(isolation_, scratch_);
  scratch_.clear();
  pid_ = -1;
  to_worker_ = from_worker_ = -1;
  pending_.clear();
}

std::string HarnessWorker::stderr_tail() const {
  auto text = read_file(stderr_log_);
  if (!text.is_ok()) return "";
  const std::string& s = text.value();
  return s.size() > 1500 ? s.substr(s.size() - 1500) : s;
}

StatusOr<EvalResult> HarnessWorker::evaluate(const EvalRequest& request) {
  double timeout = request.timeout_seconds;
  if (pid_ < 0) {
    KF_RETURN_IF_ERROR(start());
    timeout += options_.start_timeout_seconds;
  }
  Json req = {{"problem", fs::absolute(request.problem).string()},
              {"candidate", fs::absolute(request.candidate).string()},
              {"protocol", request.protocol},
              {"verify", request.verify},
              {"profile", request.profile},
              {"precompile", request.precompile},
              {"static_check", request.static_check},
              {"trials", request.trials}};
  EvalResult failed;
  failed.predicted = false;
  failed.protocol = request.protocol;
  failed.outcome = Outcome::kRuntimeFault;

  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
  bool written = write_all(to_worker_, req.dump() + "\n");
  if (!written) {  // the worker died after its last answer: this request gets a fresh one
    stop();
    KF_RETURN_IF_ERROR(start());
    written = write_all(to_worker_, req.dump() + "\n");
  }
  std::string line;
  while (written) {
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      break;
    }
    auto now = Clock::now();
    if (now >= deadline) {
      stop();
      failed.outcome = Outcome::kTimeout;
      failed.message = "no answer within " + std::to_string(static_cast<int>(timeout)) +
                       " s; the worker was killed (a hang, or a candidate far too slow)";
      return failed;
    }
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd pfd{from_worker_, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(wait_ms + 1, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[65536];
    ssize_t n = ::read(from_worker_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the worker closed its end: it died
    pending_.append(buf, static_cast<size_t>(n));
  }
  if (line.empty()) {
    int status = 0;
    pid_t pid = pid_;
    std::string how = "exited";
    // Its pipe closed; give the process a moment to finish dying so that we can say how it ended.
    for (int waited_ms = 0; pid > 0 && waited_ms < 2000; waited_ms += 10) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        // Inside bubblewrap the worker's death by signal N comes back as bubblewrap's exit 128 + N.
        const bool wrapped = !isolation_.argv_prefix.empty();
        if (WIFSIGNALED(status)) {
          how = "was killed by signal " + std::to_string(WTERMSIG(status));
        } else if (wrapped && WEXITSTATUS(status) > 128) {
          how = "was killed by signal " + std::to_string(WEXITSTATUS(status) - 128);
        } else {
          how = "exited with status " + std::to_string(WEXITSTATUS(status));
        }
        break;
      }
      ::usleep(10000);
    }
    std::string tail = stderr_tail();
    stop();
    failed.message = "the harness worker " + how + " without an answer" + (tail.empty() ? "" : ":\n" + tail);
    return failed;
  }
  auto j = parse_json(line, "the harness's answer");
  if (!j.is_ok()) {
    stop();
    failed.message = j.status().message();
    return failed;
  }
  EvalResult r = result_from_harness_json(j.value(), request.protocol);
  // After a fault the CUDA context may be poisoned: the next candidate gets a fresh worker.
  if (r.outcome == Outcome::kRuntimeFault || r.outcome == Outcome::kResourceExhausted) stop();
  return r;
}

}  // namespace kforge::sandbox
