// The audit bundle: staging every problem's files, the manifest, the README and the upstream script,
// then one tar.gz (through the system's tar).
#include "cli/bundle.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "base/files.h"
#include "base/subprocess.h"
#include "codegen/export_kernelbench.h"

namespace kforge::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kExportName = "kernelbench_model_new.py";
constexpr uintmax_t kLargestMember = 64ull << 20;  // bytes; bigger files are listed as left out

std::string fmt_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Built binaries stay out (the reader rebuilds them from the sources); everything else goes in.
bool is_binary_output(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".so" || ext == ".o" || ext == ".a" || ext == ".pyc" || p.filename() == "__pycache__";
}

// kforge's own bookkeeping (the folder's ownership marker): not part of what a reader audits.
bool is_bookkeeping(const fs::path& p) {
  return p.filename() == ".kforge-out";
}

// Copies the candidate's folder into `to`; returns the members (relative, sorted) and what was left out.
Status copy_candidate(const fs::path& from, const fs::path& to, OrderedJson& files, OrderedJson& left_out) {
  std::error_code ec;
  std::vector<std::string> names;
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(from);
    if (is_binary_output(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      left_out.push_back(rel.string() + " (built binary: rebuilt from the sources)");
      continue;
    }
    if (!it->is_regular_file() || is_bookkeeping(it->path())) continue;
    if (it->file_size() > kLargestMember) {
      left_out.push_back(rel.string() + " (over 64 MiB)");
      continue;
    }
    fs::create_directories((to / rel).parent_path(), ec);
    if (ec || !fs::copy_file(it->path(), to / rel, fs::copy_options::overwrite_existing, ec) || ec)
      return external_error("cannot copy " + it->path().string() + " into the bundle: " + ec.message());
    names.push_back(rel.string());
  }
  if (ec) return external_error("cannot read " + from.string() + ": " + ec.message());
  std::sort(names.begin(), names.end());
  for (const auto& n : names) files.push_back(n);
  return Status::ok();
}

// One problem's folder in the bundle; returns its manifest entry.
StatusOr<OrderedJson> stage_problem(const BundleProblem& p, const fs::path& root, const BundleRun& run) {
  const fs::path rel = fs::path("problems") / (p.level.empty() ? "problem" : p.level) / p.name;
  const fs::path dir = root / rel;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return external_error("cannot create " + dir.string() + ": " + ec.message());
  OrderedJson e;
  e["level"] = p.level;
  e["problem"] = p.name;
  e["dir"] = rel.string();
  e["outcome"] = p.record.value("outcome", std::string("unknown"));
  e["predicted"] = p.record.value("predicted", true);
  OrderedJson files = OrderedJson::array();
  OrderedJson left_out = OrderedJson::array();
  if (!fs::copy_file(p.problem, dir / "problem.py", fs::copy_options::overwrite_existing, ec) || ec)
    return external_error("cannot copy the problem " + p.problem.string() + " into the bundle: " + ec.message());
  files.push_back("problem.py");
  KF_RETURN_IF_ERROR(write_file(dir / "record.json", p.record.dump(1) + "\n"));
  files.push_back("record.json");
  if (fs::is_directory(p.out_dir, ec)) KF_RETURN_IF_ERROR(copy_candidate(p.out_dir, dir, files, left_out));
  e["export"] = nullptr;
  if (fs::exists(p.out_dir / "graph.json", ec)) {
    // The export that upstream's evaluator loads as it is (CUDA inline, built by load_inline on import).
    // A program that only calls libraries is exported all the same: the manifest says upstream's
    // strict checker rejects it.
    auto file = kernelbench_file(p.out_dir.string(), "", run.protocol, run.common, /*allow_library_only=*/true);
    if (file.is_ok()) {
      KF_RETURN_IF_ERROR(write_file(dir / kExportName, file->text));
      files.push_back(kExportName);
      e["export"] = kExportName;
      if (!file->note.empty()) e["export_note"] = file->note;
      OrderedJson check;
      const auto violations = codegen::kernelbench_static_violations(file->text);
      check["passes"] = violations.empty();
      check["violations"] = violations;
      e["upstream_static_check"] = check;
    } else {
      e["export_error"] = file.status().message();
    }
  } else {
    e["export_error"] = "not built: nothing to export";
  }
  e["files"] = files;
  if (!left_out.empty()) e["left_out"] = left_out;
  return e;
}

std::string readme(const OrderedJson& manifest, const BundleRun& run) {
  auto field = [&](const char* k) {
    auto it = manifest.find(k);
    if (it == manifest.end() || it->is_null()) return std::string("unknown");
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  const auto& p = run.protocol;
  std::string s;
  s += "# kforge audit bundle\n\n";
  s += "Written by `kforge " + run.command + " --bundle` on " + field("date") + ".\n\n";
  s += "| | |\n|---|---|\n";
  s += "| kforge commit | " + field("commit") + " |\n";
  s += "| protocol | " + p.name + " (models in " + p.mode + " mode, atol " + fmt_number(p.atol) + ", rtol " +
       fmt_number(p.rtol) + ", " + std::to_string(p.input_sets) + " input sets) |\n";
  s += "| timing method | " + run.common.timing.method + (run.common.timing.fresh_inputs ? ", fresh inputs" : "") +
       "; baselines: ";
  for (size_t i = 0; i < run.common.timing.baselines.size(); ++i) s += (i ? ", " : "") + run.common.timing.baselines[i];
  s += " |\n";
  s += "| device | " + field("device") + " |\n";
  s += "| torch | " + field("torch") + " |\n";
  s += "| times | " +
       std::string(manifest.value("predicted", true)
                       ? "PREDICTED by kforge's roofline cost model (no GPU): correctness NOT verified"
                       : "measured on the device above") +
       " |\n\n";
  s +=
      "`manifest.json` lists every problem with its outcome, its files and whether upstream KernelBench's strict\n"
      "static checker accepts its export; `records.json` holds kforge's record of each (as bench.json has it).\n\n"
      "Per problem, `problems/<level>/<name>/`:\n\n"
      "- `problem.py`: the problem (KernelBench format) as it was given\n"
      "- `kernelbench_model_new.py`: the program as one self-contained ModelNew file; its CUDA is inline and is\n"
      "  built by `torch.utils.cpp_extension.load_inline` on import (this is the rebuild: it needs nvcc and a GPU)\n"
      "- `model_new.py`, `kernels/` (one `.cu` per kernel, `entry.cu`), `program.json`: kforge's own form, which\n"
      "  loads `libkforge_<name>.so` (left out: `kforge build problem.py --schedule schedule.json` rebuilds it)\n"
      "- `graph.json`, `schedule.json`: the traced graph and the schedule that was built\n"
      "- `build.log`: nvcc's commands and output; `report.json`: the build's report; `record.json`: the result\n\n"
      "## Re-run with upstream KernelBench's evaluator\n\n"
      "```bash\n"
      "tar -xzf BUNDLE.tar.gz && cd kforge-bundle\n"
      "python3 run_upstream_eval.py --upstream PATH/TO/KernelBench/src --bundle . --json upstream.json\n"
      "```\n\n"
      "`--upstream` is the folder holding upstream's `kernelbench` package (ScalingIntelligence/KernelBench, `src/`).\n"
      "Each export is judged in a process of its own, one at a time: upstream's strict static checker\n"
      "(`validate_kernel_static`, backend cuda, fp32), then `eval_kernel_against_ref` (5 correctness trials, fp32\n"
      "tolerance; `--perf` also times it with upstream's method). Each verdict is printed beside kforge's, and\n"
      "disagreements are counted. Without a GPU only the static checker runs (`--static-only` asks for that).\n";
  return s;
}

}  // namespace

std::string today_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

// The commit of the kforge tree: $KFORGE_COMMIT (set by scripts that run on copies), else git.
std::string kforge_commit() {
  if (const char* c = std::getenv("KFORGE_COMMIT"); c && *c) return c;
  auto home = kforge_home();
  if (!home.is_ok()) return "unknown";
  auto r = run_process({"git", "-C", home->string(), "rev-parse", "--short", "HEAD"}, {.timeout_seconds = 10});
  if (!r.is_ok() || !r->ok()) return "unknown";
  std::string s = r->output;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  auto dirty = run_process({"git", "-C", home->string(), "status", "--porcelain", "--untracked-files=no"},
                           {.timeout_seconds = 10});
  if (dirty.is_ok() && dirty->ok() && !dirty->output.empty()) s += "+dirty";
  return s;
}

std::string build_log_text(const sandbox::BuildResult& build) {
  std::string log = "build: " + build.outcome + (build.message.empty() ? "" : ": " + build.message) + "\n";
  for (const auto& c : build.compiles) {
    log += "==> " + c.file + " (" + (c.ok ? "ok" : "FAILED") + (c.cached ? ", from the build cache" : "") + ")\n";
    log += c.log;
    if (!c.log.empty() && c.log.back() != '\n') log += "\n";
  }
  return log;
}

Status check_bundle_target(const fs::path& file, bool force) {
  if (!ends_with(file.filename().string(), ".tar.gz") && !ends_with(file.filename().string(), ".tgz"))
    return invalid_argument("--bundle " + file.string() + ": the bundle is a gzipped tar; name it FILE.tar.gz");
  std::error_code ec;
  if (fs::is_directory(file, ec))
    return invalid_argument("--bundle " + file.string() + " is a directory; give a file name (FILE.tar.gz)");
  if (fs::exists(file, ec) && !force)
    return invalid_argument("--bundle " + file.string() +
                            " exists; pick another file name, or pass --force to overwrite it");
  const fs::path parent = fs::absolute(file).parent_path();
  if (!fs::is_directory(parent, ec))
    return invalid_argument("--bundle " + file.string() + ": the folder " + parent.string() + " does not exist");
  return Status::ok();
}

StatusOr<size_t> write_bundle(const fs::path& file, const std::vector<BundleProblem>& problems, const BundleRun& run) {
  KF_ASSIGN_OR_RETURN(fs::path home, kforge_home());
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  const fs::path staging =
      fs::temp_directory_path() / ("kforge-bundle-" + std::to_string(::getpid()) + "-" + std::to_string(stamp));
  const fs::path root = staging / kBundleRoot;
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{staging};
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return external_error("cannot create " + root.string() + ": " + ec.message());

  OrderedJson manifest;
  manifest["format"] = "kforge.bundle/1";
  manifest["command"] = run.command;
  for (const char* k : {"commit", "date", "device", "torch", "predicted", "suite", "isolation"})
    if (run.header.contains(k)) manifest[k] = run.header[k];
  manifest["protocol"] = sandbox::protocol_to_json(run.protocol);
  manifest["timing"] = sandbox::timing_to_json(run.common.timing);
  manifest["disabled_skills"] = run.common.disabled_skills;
  manifest["problems"] = OrderedJson::array();
  OrderedJson records = OrderedJson::array();
  for (const auto& p : problems) {
    KF_ASSIGN_OR_RETURN(OrderedJson entry, stage_problem(p, root, run));
    manifest["problems"].push_back(std::move(entry));
    records.push_back(p.record);
  }
  KF_RETURN_IF_ERROR(write_file(root / "manifest.json", manifest.dump(1) + "\n"));
  KF_RETURN_IF_ERROR(write_file(root / "records.json", records.dump(1) + "\n"));
  KF_RETURN_IF_ERROR(write_file(root / "README.md", readme(manifest, run)));
  KF_ASSIGN_OR_RETURN(std::string script, read_file(home / "python" / "kforge" / "upstream_eval.py"));
  KF_RETURN_IF_ERROR(write_file(root / "run_upstream_eval.py", script));

  // Packed beside FILE under another name, then renamed over it: FILE is whole or untouched.
  const fs::path partial = fs::absolute(file).string() + ".partial";
  const std::vector<std::string> argv = {"tar",  "--sort=name",    "--owner=0", "--group=0",      "--numeric-owner",
                                         "-czf", partial.string(), "-C",        staging.string(), kBundleRoot};
  ProcessOptions tar_options;
  tar_options.timeout_seconds = 1800;
  KF_ASSIGN_OR_RETURN(ProcessResult tar, run_process(argv, tar_options));
  if (!tar.ok()) {
    fs::remove(partial, ec);
    return external_error("tar could not write " + partial.string() + " (exit " + std::to_string(tar.exit_code) +
                          "): " + tar.output.substr(0, 400));
  }
  fs::rename(partial, file, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(partial, ec);
    return external_error("cannot move the bundle to " + file.string() + ": " + why);
  }
  return problems.size();
}

}  // namespace kforge::cli
