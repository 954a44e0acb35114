// run_process: fork/exec with a pipe for output, a time limit and a process group to kill.
#include "base/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace kforge {

namespace {

using Clock = std::chrono::steady_clock;

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

StatusOr<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  KF_CHECK(!argv.empty()) << "run_process needs a program";
  int out_pipe[2];
  int in_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    return external_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  auto start = Clock::now();
  pid_t pid = ::fork();
  if (pid < 0) return external_error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(out_pipe[1], 2);
    if (!options.working_dir.empty() && ::chdir(options.working_dir.c_str()) != 0) {
      std::fprintf(stderr, "cannot enter %s: %s\n", options.working_dir.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    for (const auto& e : options.extra_env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(in_pipe[0]);
  write_all(in_pipe[1], options.stdin_data);
  ::close(in_pipe[1]);

  ProcessResult result;
  auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_seconds));
  char buf[65536];
  bool open = true;
  while (open) {
    auto now = Clock::now();
    if (now >= deadline) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
    pollfd pfd{out_pipe[0], POLLIN, 0};
    int r = ::poll(&pfd, 1, wait_ms < 1000 ? wait_ms + 1 : 1000);
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) {
      ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
      if (n > 0) {
        result.output.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        open = false;
      }
    }
  }
  ::close(out_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::kill(-pid, SIGKILL);  // reap stragglers of the group, if any
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFEXITED(status)) {
    result.exit_code = result.timed_out ? -1 : WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = -1;
  }
  return result;
}

}  // namespace kforge
