// LineWorker: fork/exec with two pipes, a deadline per answer, and process-group kills.
#include "base/line_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/files.h"

namespace kforge {

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

}  // namespace

std::string describe_wait_status(int status, bool wrapped) {
  if (status < 0) return "ended";
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  if (wrapped && WEXITSTATUS(status) > 128) return "was killed by signal " + std::to_string(WEXITSTATUS(status) - 128);
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

LineWorker::~LineWorker() {
  stop();
}

Status LineWorker::start(const LineWorkerSpec& spec) {
  stop();
  ::signal(SIGPIPE, SIG_IGN);  // a child that dies mid-request must not kill us
  int to[2];
  int from[2];
  if (::pipe2(to, O_CLOEXEC) != 0) return external_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  if (::pipe2(from, O_CLOEXEC) != 0) {
    ::close(to[0]);
    ::close(to[1]);
    return external_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> argv = spec.argv;
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const std::string log = spec.stderr_log.string();
  pid_t pid = ::fork();
  if (pid < 0) return external_error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(to[0], 0);
    ::dup2(from[1], 1);
    int err = log.empty() ? -1 : ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) ::dup2(err, 2);
    for (const auto& e : spec.env) ::putenv(const_cast<char*>(e.c_str()));
    if (spec.in_child) spec.in_child();
    ::execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  pid_ = pgid_ = pid;
  to_child_ = to[1];
  from_child_ = from[0];
  pending_.clear();
  stderr_log_ = spec.stderr_log;
  ++starts_;
  return Status::ok();
}

void LineWorker::stop() {
  if (pgid_ > 0) ::kill(-pgid_, SIGKILL);
  if (pid_ > 0) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pgid_ = -1;
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  pid_ = -1;
  to_child_ = from_child_ = -1;
  pending_.clear();
}

std::string LineWorker::stderr_tail(size_t max_bytes) const {
  auto text = read_file(stderr_log_);
  if (!text.is_ok()) return "";
  const std::string& s = text.value();
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

LineWorker::Reply LineWorker::ask(const std::string& request_line, double timeout_seconds,
                                  const LineWorkerSpec* restart) {
  Reply reply;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  bool written = running() && write_all(to_child_, request_line + "\n");
  if (!written && restart != nullptr && start(*restart).is_ok()) {  // it died after its last answer
    written = write_all(to_child_, request_line + "\n");
  }
  while (written) {
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      reply.kind = Reply::kAnswer;
      reply.line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return reply;
    }
    auto now = Clock::now();
    if (now >= deadline) {
      stop();
      reply.kind = Reply::kTimeout;
      return reply;
    }
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd pfd{from_child_, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(wait_ms + 1, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[65536];
    ssize_t n = ::read(from_child_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed its end: it died
    pending_.append(buf, static_cast<size_t>(n));
  }
  // Its pipe closed; give the process a moment to finish dying so that its status can be told.
  reply.kind = Reply::kDied;
  for (int waited_ms = 0; pid_ > 0 && waited_ms < 2000; waited_ms += 10) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      reply.wait_status = status;
      pid_ = -1;  // reaped; stop() must not wait for it again
      break;
    }
    ::usleep(10000);
  }
  return reply;
}

}  // namespace kforge
