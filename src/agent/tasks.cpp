// Task sets: find the problem files, import them once (a persistent Python worker, or one importer
// process per file in train mode), cache the graph JSON by content hash and protocol, split them.
#include "agent/tasks.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "base/files.h"
#include "sandbox/build.h"
#include "sandbox/protocol.h"
#include "sandbox/python.h"
#include "synth/worker.h"

namespace kforge::agent {

namespace fs = std::filesystem;

namespace {

constexpr const char* kWhatToGive =
    "give a dataset directory of `kforge synth`, a KernelBench suite directory (level*/N_*.py) or a problem .py";
constexpr size_t kSourcesPerRequest = 16;
constexpr double kImportSecondsPerSource = 120;

struct ProblemFile {
  std::string name;  // the task's name: the file stem, with its level directory in a suite
  fs::path path;
};

std::vector<fs::path> python_files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec) && e.path().extension() == ".py" && e.path().filename() != "__init__.py")
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A synth dataset: index.jsonl's order, its "file" relative to the dataset directory.
StatusOr<std::vector<ProblemFile>> dataset_files(const fs::path& dir) {
  KF_ASSIGN_OR_RETURN(std::string text, read_file(dir / "index.jsonl"));
  std::vector<ProblemFile> out;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) continue;
    auto j = parse_json(line, (dir / "index.jsonl").string() + " line " + std::to_string(number));
    if (!j.is_ok()) return j.status();
    if (!j->contains("file") || !(*j)["file"].is_string())
      return invalid_argument((dir / "index.jsonl").string() + " line " + std::to_string(number) +
                              " has no \"file\": is this a dataset of `kforge synth`?");
    fs::path file = dir / (*j)["file"].get<std::string>();
    out.push_back({file.stem().string(), file});
  }
  return out;
}

// A suite: the directory's own .py files, then each subdirectory's (level1/, level2/, ...), sorted.
std::vector<ProblemFile> suite_files(const fs::path& dir) {
  std::vector<ProblemFile> out;
  for (const auto& f : python_files_in(dir)) out.push_back({f.stem().string(), f});
  std::vector<fs::path> subdirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) subdirs.push_back(e.path());
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& sub : subdirs) {
    for (const auto& f : python_files_in(sub)) out.push_back({sub.filename().string() + "/" + f.stem().string(), f});
  }
  return out;
}

StatusOr<std::vector<ProblemFile>> problem_files(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) return not_found("no such file or directory: " + path + "; " + kWhatToGive);
  if (fs::is_regular_file(p, ec)) {
    if (p.extension() != ".py") return invalid_argument(path + " is not a problem file (.py); " + kWhatToGive);
    return std::vector<ProblemFile>{{p.stem().string(), p}};
  }
  std::vector<ProblemFile> files;
  if (fs::exists(p / "index.jsonl", ec)) {
    KF_ASSIGN_OR_RETURN(files, dataset_files(p));
  } else {
    files = suite_files(p);
  }
  if (files.empty()) return invalid_argument(path + " holds no problem files (.py); " + kWhatToGive);
  return files;
}

StatusOr<std::string> mode_of(const std::string& protocol) {
  KF_ASSIGN_OR_RETURN(sandbox::Protocol p, sandbox::protocol_named(protocol));
  return p.mode;
}

// One file on its way to a task: its source, cache entry, and the import's graph or error.
struct Pending {
  ProblemFile file;
  std::string source;
  fs::path cache_path;
  std::optional<Json> graph;
  std::string error;
  bool problem_error = false;  // the importer rejected the problem (cached); else the tooling failed
};

// Imports the files in `todo` through one persistent worker (the synth worker's `trace`, eval mode),
// in batches; a batch the worker fails on is retried one file at a time.
Status import_with_worker(std::vector<Pending*>& todo, const std::function<void()>& one_done) {
  synth::SynthWorker worker;
  auto trace = [&](const std::vector<Pending*>& batch) -> Status {
    Json req = {{"cmd", "trace"}, {"name", "task"}, {"sources", Json::array()}};
    for (const Pending* p : batch) req["sources"].push_back(p->source);
    KF_ASSIGN_OR_RETURN(Json answer, worker.request(req, kImportSecondsPerSource * static_cast<double>(batch.size())));
    if (!answer.contains("graphs") || answer["graphs"].size() != batch.size())
      return internal_error("the import worker answered without one graph per source");
    for (size_t i = 0; i < batch.size(); ++i) {
      Json& g = answer["graphs"][i];
      if (g.contains("error")) {
        batch[i]->error = g["error"].is_string() ? g["error"].get<std::string>() : g["error"].dump();
        batch[i]->problem_error = true;
      } else {
        batch[i]->graph = std::move(g);
      }
    }
    return Status::ok();
  };
  for (size_t start = 0; start < todo.size(); start += kSourcesPerRequest) {
    std::vector<Pending*> batch(todo.begin() + static_cast<long>(start),
                                todo.begin() + static_cast<long>(std::min(todo.size(), start + kSourcesPerRequest)));
    Status st = trace(batch);
    if (!st.is_ok()) {
      if (st.message().find("needs PyTorch") != std::string::npos) return st;
      for (Pending* p : batch) {
        Status one = trace({p});
        if (!one.is_ok()) p->error = one.message();
      }
    }
    for (size_t i = 0; i < batch.size(); ++i) one_done();
  }
  return Status::ok();
}

// Train mode (kernelbench protocol): the worker traces in eval mode only, so one importer per file.
void import_one_by_one(std::vector<Pending*>& todo, const std::string& mode, const std::function<void()>& one_done) {
  for (Pending* p : todo) {
    auto j = sandbox::run_importer(p->file.path.string(), {.mode = mode});
    if (j.is_ok()) {
      p->graph = std::move(j).value();
    } else {
      p->error = j.status().message();
      p->problem_error =
          j.status().code() == ErrorCode::kInvalidArgument || j.status().code() == ErrorCode::kUnsupported;
    }
    one_done();
  }
}

fs::path graph_cache_dir(const TaskLoadOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  return sandbox::default_cache_dir() / "graphs";
}

StatusOr<Task> task_from_graph_json(const Pending& p, const std::string& protocol) {
  KF_ASSIGN_OR_RETURN(ir::Graph g, ir::graph_from_json(*p.graph, p.file.path.string()));
  // The cache is keyed by content: the same problem may live at another path under another name.
  g.source = p.file.path.string();
  g.name = p.file.path.stem().string();
  Task t;
  t.name = p.file.name;
  t.source = p.file.path.string();
  t.graph = std::move(g);
  t.protocol = protocol;
  return t;
}

}  // namespace

StatusOr<TaskSet> load_tasks(const std::vector<std::string>& paths, const TaskLoadOptions& options) {
  KF_ASSIGN_OR_RETURN(std::string mode, mode_of(options.protocol));
  if (paths.empty()) return invalid_argument(std::string("no task paths: ") + kWhatToGive);
  std::vector<ProblemFile> files;
  for (const auto& path : paths) {
    KF_ASSIGN_OR_RETURN(std::vector<ProblemFile> more, problem_files(path));
    files.insert(files.end(), more.begin(), more.end());
  }
  if (options.limit > 0 && static_cast<int>(files.size()) > options.limit)
    files.resize(static_cast<size_t>(options.limit));

  const fs::path cache = graph_cache_dir(options);
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) return external_error("cannot create the graph cache " + cache.string() + ": " + ec.message());

  const int total = static_cast<int>(files.size());
  int done = 0;
  auto one_done = [&] {
    ++done;
    if (options.progress) options.progress(done, total);
  };
  // A changed importer (python/kforge, ops.def) makes new graphs: the cache is keyed by its sources too.
  KF_ASSIGN_OR_RETURN(std::string importer, sandbox::importer_fingerprint());
  std::vector<Pending> pending(files.size());
  std::vector<Pending*> todo;
  for (size_t i = 0; i < files.size(); ++i) {
    Pending& p = pending[i];
    p.file = files[i];
    auto text = read_file(p.file.path);
    if (!text.is_ok()) {
      p.error = text.status().message();
      one_done();
      continue;
    }
    p.source = std::move(text).value();
    p.cache_path =
        cache / (content_hash(p.source + "\n--protocol " + options.protocol + "\n--importer " + importer) + ".json");
    if (auto cached = read_file(p.cache_path); cached.is_ok()) {
      if (auto j = parse_json(cached.value(), p.cache_path.string()); j.is_ok()) {
        if (j->contains("error")) {
          p.error = (*j)["error"].get<std::string>();
        } else {
          p.graph = std::move(j).value();
        }
        one_done();
        continue;
      }
    }
    todo.push_back(&p);
  }
  if (!todo.empty()) {
    if (mode == "eval") {
      KF_RETURN_IF_ERROR(import_with_worker(todo, one_done));
    } else {
      import_one_by_one(todo, mode, one_done);
    }
    for (Pending* p : todo) {
      // The importer's verdict on a problem is cached, failures of the tooling are not.
      if (p->graph) {
        (void)write_file(p->cache_path, p->graph->dump() + "\n");
      } else if (p->problem_error) {
        (void)write_file(p->cache_path, Json{{"error", p->error}}.dump() + "\n");
      }
    }
  }

  TaskSet set;
  for (const Pending& p : pending) {
    if (!p.graph) {
      set.skipped.push_back(p.file.path.string() + ": " + p.error);
      continue;
    }
    auto task = task_from_graph_json(p, options.protocol);
    if (task.is_ok()) {
      set.tasks.push_back(std::move(task).value());
    } else {
      set.skipped.push_back(p.file.path.string() + ": " + task.status().message());
    }
  }
  if (set.tasks.empty()) {
    return invalid_argument("none of the " + std::to_string(total) +
                            " problem files imported; the first: " + set.skipped.front());
  }
  return set;
}

void split_tasks(const std::vector<Task>& all, double held_out_fraction, std::vector<Task>* train,
                 std::vector<Task>* held_out) {
  train->clear();
  held_out->clear();
  const double fraction = std::clamp(held_out_fraction, 0.0, 1.0);
  // A name's place in [0, 1) from its content hash: the same names always fall the same way.
  // (FNV's digits mix poorly for short names that differ in one character: finish with splitmix64.)
  auto place = [](const std::string& name) {
    uint64_t x = std::stoull(content_hash(name).substr(16), nullptr, 16);
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return static_cast<double>(x >> 11) / static_cast<double>(1ULL << 53);
  };
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < all.size(); ++i) order.emplace_back(place(all[i].name), i);
  std::vector<bool> is_held(all.size(), false);
  size_t held = 0;
  for (const auto& [u, i] : order) {
    if (u < fraction) {
      is_held[i] = true;
      ++held;
    }
  }
  // At least one held out when there are two or more (the lowest-placed name), never all of them.
  if (all.size() >= 2 && fraction > 0 && held == 0) {
    is_held[std::min_element(order.begin(), order.end())->second] = true;
  }
  if (all.size() >= 2 && held == all.size()) {
    is_held[std::max_element(order.begin(), order.end())->second] = false;
  }
  for (size_t i = 0; i < all.size(); ++i) (is_held[i] ? held_out : train)->push_back(all[i]);
}

}  // namespace kforge::agent
