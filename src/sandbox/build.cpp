// nvcc driver: writes sources, compiles them on a pool of jobs, links, caches by content hash.
#include "sandbox/build.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "base/files.h"
#include "base/subprocess.h"
#include "codegen/cuda_units.h"
#include "sandbox/static_check.h"

namespace kforge::sandbox {

namespace fs = std::filesystem;

namespace {

struct Unit {
  std::string file;
  std::string code;
  std::vector<size_t> kernels;  // program.kernels compiled in this unit (a chunk); empty for the entry and runtime
};

// Kernels compiled together, one nvcc run per chunk: nvcc's fixed cost (about 0.8 s a run) is most of a small
// kernel's build. A chunk ends after a kernel whose content hash says so (about one in kChunkAverage) or at
// kChunkMax kernels, so boundaries depend on the kernels near them only: a changed kernel recompiles its own
// chunk, an inserted or removed one moves the boundaries next to it, not every chunk after it.
constexpr size_t kChunkAverage = 8;
constexpr size_t kChunkMax = 16;

StatusOr<std::vector<Unit>> kernel_chunks(const codegen::Program& program, const std::set<std::string>& header_macros) {
  std::vector<std::vector<size_t>> groups(1);
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    groups.back().push_back(i);
    const std::string h = content_hash(program.kernels[i].code);
    const bool boundary = std::stoull(h.substr(0, 8), nullptr, 16) % kChunkAverage == 0;
    if ((boundary || groups.back().size() == kChunkMax) && i + 1 < program.kernels.size()) groups.emplace_back();
  }
  std::vector<Unit> chunks;
  for (const auto& group : groups) {
    if (group.empty()) continue;
    std::vector<codegen::CudaUnit> members;
    for (size_t i : group) members.push_back({program.kernels[i].file_name, program.kernels[i].code});
    KF_ASSIGN_OR_RETURN(codegen::MergedUnits merged, codegen::merge_units(members, header_macros, group.front()));
    std::string code = "// kforge: " + std::to_string(group.size()) + " kernels compiled as one unit (" +
                       members.front().file + (group.size() > 1 ? " ... " + members.back().file : "") + ")\n" +
                       "#include \"kforge_runtime.cuh\"\n";
    for (const auto& l : merged.includes) code += l + "\n";
    code += "\n" + merged.body;
    chunks.push_back({"chunk_" + program.kernels[group.front()].name + ".cu", std::move(code), group});
  }
  return chunks;
}

// One record per kernel (reports match records to kernels by file name and read each kernel's registers
// and spills), then the entry and the runtime: a chunk's record is split by the namespace merge_units gave
// each kernel, which its functions' mangled names carry. The chunk's log goes with its first kernel.
std::vector<CompileRecord> per_kernel_records(const codegen::Program& program, const std::vector<Unit>& units,
                                              std::vector<CompileRecord> compiled) {
  std::vector<CompileRecord> out;
  for (size_t u = 0; u < units.size(); ++u) {
    if (units[u].kernels.empty()) {
      out.push_back(std::move(compiled[u]));
      continue;
    }
    const CompileRecord& chunk = compiled[u];
    for (size_t i : units[u].kernels) {
      CompileRecord rec;
      rec.file = program.kernels[i].file_name;
      rec.ok = chunk.ok;
      rec.cached = chunk.cached;
      rec.seconds = chunk.seconds;
      rec.log = i == units[u].kernels.front() ? chunk.log : "(compiled in " + units[u].file + ")\n";
      const std::string ns = "kforge_unit_" + std::to_string(i) + "_" +
                             codegen::identifier(fs::path(program.kernels[i].file_name).stem().string());
      for (const auto& ru : chunk.resources) {
        if (ru.kernel.find(ns) != std::string::npos) rec.resources.push_back(ru);
      }
      out.push_back(std::move(rec));
    }
  }
  return out;
}

std::string libraries_flags(const std::vector<std::string>& libs) {
  std::string out;
  for (const auto& l : libs) out += " -l" + l;
  return out;
}

// A name for a file that becomes a cache entry by rename: unique across the threads of this process
// and across processes sharing the cache, so concurrent builds of the same unit never interleave.
fs::path unique_temp(const fs::path& final_path) {
  static std::atomic<uint64_t> counter{0};
  return fs::path(final_path.string() + ".tmp" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
}

// The process-wide nvcc slots of set_process_nvcc_limit.
struct NvccSlots {
  std::mutex mu;
  std::condition_variable freed;
  int limit = 0;  // 0: unlimited
  int running = 0;
};

NvccSlots& nvcc_slots() {
  static NvccSlots slots;
  return slots;
}

class NvccSlot {
 public:
  NvccSlot() {
    NvccSlots& s = nvcc_slots();
    std::unique_lock<std::mutex> lock(s.mu);
    s.freed.wait(lock, [&] { return s.limit <= 0 || s.running < s.limit; });
    ++s.running;
  }
  ~NvccSlot() {
    NvccSlots& s = nvcc_slots();
    {
      std::lock_guard<std::mutex> lock(s.mu);
      --s.running;
    }
    s.freed.notify_one();
  }
  NvccSlot(const NvccSlot&) = delete;
  NvccSlot& operator=(const NvccSlot&) = delete;
};

}  // namespace

void set_process_nvcc_limit(int n) {
  NvccSlots& s = nvcc_slots();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.limit = n;
  }
  s.freed.notify_all();
}

fs::path default_cache_dir() {
  if (const char* c = std::getenv("KFORGE_CACHE"); c && *c) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "kforge";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "kforge";
  return fs::temp_directory_path() / "kforge-cache";
}

std::vector<ResourceUsage> parse_resource_usage(const std::string& log) {
  std::vector<ResourceUsage> out;
  static const std::regex fn_re(R"(Function properties for (\S+))");
  static const std::regex spill_re(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex reg_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  std::istringstream in(log);
  std::string line;
  ResourceUsage* cur = nullptr;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, fn_re)) {
      out.push_back({});
      out.back().kernel = m[1];
      cur = &out.back();
    } else if (cur && std::regex_search(line, m, spill_re)) {
      cur->spill_stores = std::stoi(m[1]);
      cur->spill_loads = std::stoi(m[2]);
    } else if (cur && std::regex_search(line, m, reg_re)) {
      cur->registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem_re)) cur->shared_bytes = std::stoi(m[1]);
    }
  }
  return out;
}

StatusOr<BuildResult> build_program(const codegen::Program& program, const Toolchain& tc, const BuildOptions& options) {
  auto start = std::chrono::steady_clock::now();
  KF_ASSIGN_OR_RETURN(fs::path home, kforge_home());
  const fs::path runtime_dir = home / "src/codegen/runtime";
  const fs::path src_dir = options.out_dir / "kernels";
  const fs::path cache = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  std::error_code ec;
  fs::create_directories(src_dir, ec);
  if (ec) return external_error("cannot create " + src_dir.string() + ": " + ec.message());
  fs::create_directories(cache / "obj", ec);
  fs::create_directories(cache / "lib", ec);
  if (ec)
    return external_error("cannot create the build cache " + cache.string() + ": " + ec.message() +
                          " (set KFORGE_CACHE to a writable directory)");

  // Generated (or submitted) units are checked before anything compiles; the runtime is kforge's own.
  {
    std::vector<Finding> findings;
    for (const auto& k : program.kernels) {
      auto f = check_cuda_source(k.code, k.file_name);
      findings.insert(findings.end(), f.begin(), f.end());
    }
    auto f = check_cuda_source(program.entry.code, program.entry.file_name);
    findings.insert(findings.end(), f.begin(), f.end());
    if (!findings.empty()) {
      BuildResult result;
      result.outcome = "forbidden";
      for (const auto& x : findings) result.message += (result.message.empty() ? "" : "; ") + describe(x);
      return result;
    }
  }
  KF_ASSIGN_OR_RETURN(std::string runtime_header, read_file(runtime_dir / "kforge_runtime.cuh"));
  KF_ASSIGN_OR_RETURN(codegen::UnitParts header_parts, codegen::split_unit({"kforge_runtime.cuh", runtime_header}));
  KF_ASSIGN_OR_RETURN(std::vector<Unit> units,
                      kernel_chunks(program, {header_parts.macros.begin(), header_parts.macros.end()}));
  units.push_back({program.entry.file_name, program.entry.code, {}});
  for (const auto& rt : codegen::runtime_sources(program.libraries)) {
    KF_ASSIGN_OR_RETURN(std::string code, read_file(runtime_dir / rt));
    units.push_back({rt, code, {}});
  }
  // Copy the runtime header next to the sources so the kernels directory builds on its own; each kernel's
  // own file is written for reading beside the chunk that compiles it.
  KF_RETURN_IF_ERROR(write_file(src_dir / "kforge_runtime.cuh", runtime_header));
  for (const auto& k : program.kernels) KF_RETURN_IF_ERROR(write_file(src_dir / k.file_name, k.code));
  for (const auto& u : units) KF_RETURN_IF_ERROR(write_file(src_dir / u.file, u.code));

  std::string flag_text;
  for (const auto& f : tc.compile_flags) flag_text += f + " ";
  const std::string key_prefix = tc.nvcc_version + "\n" + flag_text + "\n" + runtime_header + "\n";

  BuildResult result;
  result.compiles.resize(units.size());
  // Keys are content hashes, known before anything compiles: when the linked library is cached,
  // its objects are not needed (a staged cache may carry the libraries without them).
  std::vector<std::string> object_keys(units.size());
  for (size_t i = 0; i < units.size(); ++i)
    object_keys[i] = content_hash(key_prefix + units[i].file + "\n" + units[i].code);
  std::string link_key_text = tc.nvcc_version + libraries_flags(program.libraries);
  for (const auto& k : object_keys) link_key_text += "\n" + k;
  const fs::path cached_lib = cache / "lib" / (content_hash(link_key_text) + ".so");
  const bool lib_cached = fs::exists(cached_lib, ec);
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status failure = Status::ok();
  auto worker = [&] {
    for (size_t i = next++; i < units.size(); i = next++) {
      const Unit& u = units[i];
      CompileRecord rec;
      rec.file = u.file;
      const std::string& key = object_keys[i];
      fs::path obj = cache / "obj" / (key + ".o");
      fs::path log_file = cache / "obj" / (key + ".log");
      std::error_code e;
      if (lib_cached || fs::exists(obj, e)) {
        rec.ok = rec.cached = true;
        auto log = read_file(log_file);
        if (log.is_ok()) rec.log = log.value();
      } else {
        fs::path tmp_obj = unique_temp(obj);
        std::vector<std::string> argv = {tc.nvcc, "-c"};
        argv.insert(argv.end(), tc.compile_flags.begin(), tc.compile_flags.end());
        argv.insert(argv.end(), {"-I", src_dir.string(), "-o", tmp_obj.string(), (src_dir / u.file).string()});
        auto r = [&] {
          NvccSlot slot;
          return run_process(argv, {.timeout_seconds = 600});
        }();
        if (!r.is_ok()) {
          std::lock_guard<std::mutex> lock(mu);
          failure = r.status();
          continue;
        }
        rec.seconds = r->seconds;
        rec.log = r->output;
        rec.ok = r->ok();
        if (r->timed_out) rec.log += "\n(nvcc ran past its 600 s limit)";
        if (rec.ok) {
          (void)write_file(log_file, rec.log);
          fs::rename(tmp_obj, obj, e);
        } else {
          fs::remove(tmp_obj, e);
        }
      }
      rec.resources = parse_resource_usage(rec.log);
      std::lock_guard<std::mutex> lock(mu);
      if (rec.cached) {
        ++result.cache_hits;
      } else {
        ++result.units_compiled;
        result.nvcc_seconds += rec.seconds;
      }
      result.compiles[i] = std::move(rec);
    }
  };
  int jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int j = 0; j < std::min<int>(jobs, static_cast<int>(units.size())); ++j) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  KF_RETURN_IF_ERROR(failure);
  result.compiles = per_kernel_records(program, units, std::move(result.compiles));

  for (const auto& rec : result.compiles) {
    if (!rec.ok) {
      result.outcome = "compile_error";
      result.message = rec.file + ": " + rec.log.substr(0, 2000);
      result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return result;
    }
  }

  if (lib_cached) {
    result.link_cached = true;
  } else {
    fs::path tmp_lib = unique_temp(cached_lib);
    // The shared CUDA runtime keeps libraries small; inside PyTorch the process's libcudart is
    // reused, elsewhere the rpath finds the toolkit's.
    std::vector<std::string> argv = {tc.nvcc,    "-shared",
                                     "-cudart",  "shared",
                                     "-gencode", "arch=compute_" + tc.arch.substr(3) + ",code=" + tc.arch,
                                     "-Xlinker", "-rpath=" + (tc.cuda_home / "lib64").string(),
                                     "-o",       tmp_lib.string()};
    for (const auto& k : object_keys) argv.push_back((cache / "obj" / (k + ".o")).string());
    for (const auto& l : program.libraries) argv.push_back("-l" + l);
    KF_ASSIGN_OR_RETURN(ProcessResult r, run_process(argv, {.timeout_seconds = 600}));
    result.link_seconds = r.seconds;
    if (!r.ok()) {
      result.outcome = "compile_error";
      result.message = "link: " + r.output.substr(0, 2000);
      CompileRecord rec;
      rec.file = "(link)";
      rec.log = r.output;
      result.compiles.push_back(rec);
      result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return result;
    }
    fs::rename(tmp_lib, cached_lib, ec);
    if (ec) return external_error("cannot store " + cached_lib.string() + ": " + ec.message());
  }
  result.library = options.out_dir / options.library_name;
  fs::copy_file(cached_lib, result.library, fs::copy_options::overwrite_existing, ec);
  if (ec) return external_error("cannot copy the library to " + result.library.string() + ": " + ec.message());
  result.ok = true;
  result.outcome = "ok";
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace kforge::sandbox
