// bubblewrap arguments, the cgroup (v2 or v1 memory + pids), and the checks that they work here.
#include "sandbox/isolation.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "base/files.h"
#include "base/subprocess.h"

namespace kforge::sandbox {

namespace fs = std::filesystem;

namespace {

std::string find_bwrap() {
  if (const char* b = std::getenv("KFORGE_BWRAP"); b && *b) return b;
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    std::error_code ec;
    if (fs::exists(fs::path(dir) / "bwrap", ec)) return (fs::path(dir) / "bwrap").string();
  }
  // Next to kforge (the GPU machine has no package manager: .gpu/bin/bwrap travels with the call).
  fs::path beside = executable_dir() / "bin" / "bwrap";
  std::error_code ec;
  return fs::exists(beside, ec) ? beside.string() : "";
}

// A trial run: bubblewrap may exist and still fail (no user namespaces).
bool bwrap_works(const std::vector<std::string>& prefix) {
  std::vector<std::string> argv = prefix;
  argv.push_back("/bin/true");
  auto r = run_process(argv, {.timeout_seconds = 20});
  return r.is_ok() && r->ok();
}

bool write_text(const fs::path& p, const std::string& text) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// A cgroup for the worker: v2 (memory.max, pids.max) or v1 (memory and pids hierarchies; the
// memory one holds the limit and the procs file the child joins).
std::string make_cgroup(const IsolationOptions& o, const std::string& name, std::string* procs, std::string* dir) {
  std::error_code ec;
  const fs::path root = "/sys/fs/cgroup";
  if (fs::exists(root / "cgroup.controllers", ec)) {
    fs::path d = root / name;
    if (!fs::create_directory(d, ec) || ec) return "";
    if (!write_text(d / "memory.max", std::to_string(o.memory_bytes)) ||
        !write_text(d / "pids.max", std::to_string(o.max_tasks))) {
      fs::remove(d, ec);
      return "";
    }
    *procs = (d / "cgroup.procs").string();
    *dir = d.string();
    return "cgroup v2: memory.max " + std::to_string(o.memory_bytes >> 30) + " GiB, pids.max " +
           std::to_string(o.max_tasks);
  }
  fs::path d = root / "memory" / name;
  if (!fs::exists(root / "memory", ec) || !fs::create_directory(d, ec) || ec) return "";
  if (!write_text(d / "memory.limit_in_bytes", std::to_string(o.memory_bytes))) {
    fs::remove(d, ec);
    return "";
  }
  *procs = (d / "cgroup.procs").string();
  *dir = d.string();
  return "cgroup v1: memory limit " + std::to_string(o.memory_bytes >> 30) + " GiB (no pids cap)";
}

}  // namespace

fs::path baseline_cache_dir() {
  // One per process, removed at exit (atexit: the harness workers that use it are gone by then).
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("kforge-baselines-" + std::to_string(::getpid()));
    std::error_code ec;
    fs::create_directories(d, ec);
    ::chmod(d.c_str(), 0700);
    std::atexit([] {
      std::error_code e;
      fs::remove_all(fs::temp_directory_path() / ("kforge-baselines-" + std::to_string(::getpid())), e);
    });
    return d;
  }();
  return dir;
}

std::vector<std::string> bwrap_arguments(const std::string& bwrap, const IsolationOptions& o) {
  std::vector<std::string> a = {bwrap,  "--ro-bind", "/",     "/",      "--dev-bind",       "/dev",
                                "/dev", "--proc",    "/proc", "--bind", o.scratch.string(), o.scratch.string()};
  // Read-only unless this worker writes the baselines (and runs no candidate): bound after "/" so that
  // it stays read-only even where it lies under the scratch's parent.
  if (!o.baseline_cache.empty())
    a.insert(a.end(),
             {o.baselines_writer ? "--bind" : "--ro-bind", o.baseline_cache.string(), o.baseline_cache.string()});
  // No capabilities inside (kforge may run as root): with the harness's checker not dumpable, the
  // candidate's process cannot ptrace it or read /proc/<checker>/mem.
  a.insert(a.end(), {"--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                     "--cap-drop", "ALL", "--"});
  return a;
}

std::vector<std::string> isolation_env(const IsolationOptions& o) {
  // A baselines worker compiles into the baseline cache itself; any other compiles into its scratch.
  const fs::path cache = o.baselines_writer && !o.baseline_cache.empty() ? o.baseline_cache : o.scratch / "torch-cache";
  std::vector<std::string> env = {"TMPDIR=" + (o.scratch / "tmp").string(), "HOME=" + o.scratch.string(),
                                  "TORCH_EXTENSIONS_DIR=" + (o.scratch / "torch_extensions").string(),
                                  "TORCHINDUCTOR_CACHE_DIR=" + (cache / "inductor").string(),
                                  "TRITON_CACHE_DIR=" + (cache / "triton").string()};
  if (!o.baseline_cache.empty()) {
    env.push_back("KFORGE_BASELINE_CACHE=" + o.baseline_cache.string());
    if (o.baselines_writer) env.push_back("KFORGE_HARNESS_ROLE=baselines");
  }
  return env;
}

StatusOr<Isolation> prepare_isolation(const IsolationOptions& options) {
  IsolationOptions o = options;
  if (o.mode.empty()) {
    const char* m = std::getenv("KFORGE_SANDBOX");
    o.mode = m && *m ? m : "auto";
  }
  if (o.mode != "auto" && o.mode != "bwrap" && o.mode != "none")
    return invalid_argument("KFORGE_SANDBOX must be auto, bwrap or none, not '" + o.mode + "'");
  std::error_code ec;
  fs::create_directories(o.scratch, ec);
  if (ec) return external_error("cannot create the worker's scratch directory " + o.scratch.string());
  Isolation iso;
  const fs::path tmp = o.scratch / "tmp";
  fs::create_directories(tmp, ec);
  iso.env = isolation_env(o);
  if (!o.baseline_cache.empty()) {
    fs::create_directories(o.baseline_cache, ec);
    if (ec) return external_error("cannot create the baseline cache " + o.baseline_cache.string());
  }
  std::string how;
  if (o.mode != "none") {
    const std::string bwrap = find_bwrap();
    std::vector<std::string> prefix = bwrap.empty() ? std::vector<std::string>{} : bwrap_arguments(bwrap, o);
    if (!prefix.empty() && bwrap_works(prefix)) {
      iso.argv_prefix = prefix;
      how = "bubblewrap (no network, read-only tree, private scratch, own PID namespace";
      if (!o.baseline_cache.empty())
        how += o.baselines_writer ? ", writes the baseline cache and runs no candidate" : ", baseline cache read-only";
      how += ")";
    } else if (o.mode == "bwrap") {
      return external_error(bwrap.empty()
                                ? "KFORGE_SANDBOX=bwrap: bubblewrap not found (Debian: apt-get install "
                                  "bubblewrap, or set KFORGE_BWRAP)"
                                : "KFORGE_SANDBOX=bwrap: " + bwrap + " does not work here (no user namespaces?)");
    } else {
      how = bwrap.empty() ? "NOT isolated: bubblewrap not found" : "NOT isolated: bubblewrap does not work here";
    }
  } else {
    how = "NOT isolated (KFORGE_SANDBOX=none)";
  }
  const std::string cg = make_cgroup(o, o.scratch.filename().string(), &iso.cgroup_procs, &iso.cgroup_dir);
  iso.description = how + "; " + (cg.empty() ? "no memory cap (cgroups not writable here)" : cg);
  return iso;
}

void release_isolation(const Isolation& isolation, const fs::path& scratch) {
  std::error_code ec;
  if (!isolation.cgroup_dir.empty()) fs::remove(isolation.cgroup_dir, ec);
  if (!scratch.empty()) fs::remove_all(scratch, ec);
}

void join_cgroup_in_child(const Isolation& isolation) {
  if (isolation.cgroup_procs.empty()) return;
  int fd = ::open(isolation.cgroup_procs.c_str(), O_WRONLY);
  if (fd < 0) return;
  (void)!::write(fd, "0", 1);
  ::close(fd);
}

}  // namespace kforge::sandbox
