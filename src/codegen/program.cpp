// Assembles a program: emits each kernel, the entry point that runs them in order, and the manifest.
#include "codegen/program.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "codegen/model_new.h"

namespace kforge::codegen {

namespace {

std::string entry_source(const ir::Graph& g, const schedule::Schedule& s, const BufferPlan& plan,
                         const std::vector<KernelSource>& kernels, const std::vector<KernelCall>& calls) {
  std::ostringstream os;
  os << "// kforge entry point for " << g.name << ": " << calls.size() << " kernels (" << kernels.size()
     << " distinct), ABI " << kAbiVersion << ".\n"
     << "#include \"kforge_runtime.cuh\"\n\n";
  const size_t nbufs = std::max<size_t>(g.values().size(), 1);
  for (const auto& k : kernels) os << "extern \"C\" int " << k.name << "(KfContext* ctx, void* const* bufs);\n";
  // The kernels in order, as one function: kf_graph_forward launches it eagerly or captures it.
  os << "\nstatic int kf_run_kernels(KfContext* ctx, void* const* bufs) {\n";
  if (calls.empty()) os << "  (void)ctx;\n  (void)bufs;\n";
  os << "  int rc = 0;\n";
  for (const auto& c : calls) {
    if (c.operands.empty()) {
      os << "  if ((rc = " << c.function << "(ctx, nullptr)) != 0) return rc;  // " << c.kernel << "\n";
      continue;
    }
    os << "  {  // " << c.kernel << "\n    void* const operands[] = {";
    for (size_t i = 0; i < c.operands.size(); ++i) os << (i ? ", " : "") << "bufs[" << c.operands[i] << "]";
    os << "};\n    if ((rc = " << c.function << "(ctx, operands)) != 0) return rc;\n  }\n";
  }
  os << "  return rc;\n}\n";
  os << "\nstatic const size_t kScratchBytes = " << plan.total_bytes() << "ULL;\n"
     << "static const size_t kWorkspaceOffset = " << plan.workspace_offset << "ULL;\n\n"
     << "extern \"C\" int kforge_abi_version(void) { return " << kAbiVersion << "; }\n"
     << "extern \"C\" size_t kforge_scratch_bytes(void) { return kScratchBytes; }\n\n"
     << "extern \"C\" int kforge_forward(void* const* inputs, void* const* params, void* const* outputs,\n"
     << "                                void* scratch, size_t scratch_bytes, void* stream) {\n"
     << (plan.total_bytes() > 0 ? "  if (scratch_bytes < kScratchBytes) return kf_fail(2, \"scratch buffer of %zu "
                                  "bytes is smaller than the %zu the program needs\", scratch_bytes, kScratchBytes);\n"
                                : "  (void)scratch_bytes;\n")
     << "  char* base = static_cast<char*>(scratch);\n"
     << "  void* bufs[" << nbufs << "] = {};\n";
  for (size_t v = 0; v < g.values().size(); ++v) {
    const BufferSlot& slot = plan.slots[v];
    os << "  bufs[" << v << "] = ";
    switch (slot.storage) {
      case Storage::kInput: os << "inputs[" << slot.index << "]"; break;
      case Storage::kParam: os << "params[" << slot.index << "]"; break;
      case Storage::kOutput: os << "outputs[" << slot.index << "]"; break;
      case Storage::kScratch: os << "base + " << slot.offset << "ULL"; break;
      case Storage::kAlias: os << "bufs[" << slot.index << "]"; break;
      case Storage::kRegister: os << "nullptr"; break;
    }
    os << ";  // " << g.value(static_cast<ir::ValueIndex>(v)).id << " " << ir::dtype_name(g.values()[v].type.dtype)
       << ir::shape_str(g.values()[v].type.shape) << "\n";
  }
  os << "  int device = 0;\n"
     << "  KF_CUDA(cudaGetDevice(&device));\n"
     << "  KfContext ctx{static_cast<cudaStream_t>(stream), base + kWorkspaceOffset, kScratchBytes - kWorkspaceOffset, "
        "device};\n"
     // One kernel gains nothing from a graph (a graph launch costs about what a kernel launch does).
     << (calls.size() >= 2
             ? "  return kf_graph_forward(&ctx, bufs, " + std::to_string(nbufs) + ", kf_run_kernels);\n}\n"
             : std::string("  return kf_run_kernels(&ctx, bufs);\n}\n"));
  (void)s;
  return os.str();
}

// A kernel's source with its name and its whole-line comments (they name the graph's values) left out, and the
// emitters' value-numbered locals (in<N>, r<N>, p<N>, v<N>: pointers, registers, vector loads named after graph
// values) renamed by order of first appearance, one bijection per prefix. Two kernels with the same identity
// are the same code up to a consistent renaming of locals, so they compute the same function of their
// operands (bufs slots, numbered per kernel).
std::string source_identity(const KernelSource& k) {
  std::string code;  // without its whole-line comments (they name graph values: "//   v2 = sigmoid(y)")
  std::istringstream lines(k.code);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line.compare(first, 2, "//") != 0) code += line + "\n";
  }
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::map<std::string, std::map<std::string, size_t>> renamed;  // prefix -> number -> its first-use rank
  std::string out;
  out.reserve(code.size());
  for (size_t i = 0; i < code.size();) {
    const char c = code[i];
    if (!is_ident(c)) {
      out += code[i++];
      continue;
    }
    size_t j = i;
    while (j < code.size() && is_ident(code[j])) ++j;
    const std::string token = code.substr(i, j - i);
    i = j;
    if (token.compare(0, k.name.size(), k.name) == 0 &&
        (token.size() == k.name.size() || token[k.name.size()] == '_')) {
      out += "\x01" + token.substr(k.name.size());  // the kernel's name, and names made from it (<name>_kernel)
      continue;
    }
    const size_t digits = token.find_first_of("0123456789");
    const std::string prefix = token.substr(0, digits);
    const bool local = digits != std::string::npos && digits > 0 &&
                       token.find_first_not_of("0123456789", digits) == std::string::npos &&
                       (prefix == "in" || prefix == "r" || prefix == "p" || prefix == "v");
    if (!local) {
      out += token;
      continue;
    }
    auto& ranks = renamed[prefix];
    auto [it, added] = ranks.emplace(token.substr(digits), ranks.size());
    out += prefix + "\x02" + std::to_string(it->second);
  }
  return out;
}

OrderedJson tensor_json(const ir::Graph& g, ir::ValueIndex v) {
  OrderedJson j;
  j["id"] = g.value(v).id;
  j["shape"] = g.type(v).shape;
  j["dtype"] = std::string(ir::dtype_name(g.type(v).dtype));
  return j;
}

}  // namespace

std::vector<std::string> runtime_sources(const std::vector<std::string>& libraries) {
  // kforge_dense_copy.cu: ModelNew copies a strided input with it (the kernelbench export may leave it out).
  std::vector<std::string> out = {"kforge_runtime.cu", std::string(kDenseCopySource)};
  for (const auto& lib : libraries) out.push_back("kforge_" + lib + ".cu");
  return out;
}

StatusOr<Program> emit_program(const ir::Graph& g, const schedule::Schedule& s, const ProgramOptions& options) {
  KF_RETURN_IF_ERROR(schedule::check_schedule(g, s));
  for (auto out : g.outputs()) {
    if (g.value(out).kind != ir::ValueKind::kNode) {
      return unsupported("forward returns its input or a parameter '" + g.value(out).id +
                         "' unchanged; kforge needs every output to be computed");
    }
  }
  std::set<ir::ValueIndex> seen;
  for (auto out : g.outputs()) {
    if (!seen.insert(out).second) return unsupported("forward returns the value '" + g.value(out).id + "' twice");
  }
  Program p;
  p.name = g.name;
  p.buffers = plan_buffers(g, s);
  std::set<std::string> libs;
  std::map<std::string, std::string> function_of;  // source identity -> the first kernel's name
  for (const auto& k : s.kernels) {
    EmitContext ctx(g, s, k, p.buffers);
    bool is_alias = k.impl == schedule::Impl::kAlias &&
                    p.buffers.slots[static_cast<size_t>(ctx.node().output)].storage == Storage::kAlias;
    if (is_alias) continue;
    auto src = emit_kernel(ctx);
    if (!src.is_ok()) return src.status().with_context("kernel " + k.name + " (" + ir::describe(g, ctx.node()) + ")");
    src->operands = ctx.operands();
    p.buffers.workspace_bytes = std::max(p.buffers.workspace_bytes, src->workspace_bytes);
    for (const auto& lib : src->libraries) libs.insert(lib);
    // A kernel whose source is another's but for its name (the same op on tensors of the same shapes, as
    // in every step of an unrolled recurrent layer) runs that one's function.
    auto [it, first] = function_of.emplace(source_identity(src.value()), src->name);
    p.calls.push_back({k.name, it->second, src->operands});
    if (first) p.kernels.push_back(std::move(src).value());
  }
  p.libraries.assign(libs.begin(), libs.end());
  p.entry.name = "entry";
  p.entry.file_name = "entry.cu";
  p.entry.code = entry_source(g, s, p.buffers, p.kernels, p.calls);

  OrderedJson m;
  m["format"] = "kforge.program/1";
  m["name"] = g.name;
  m["abi_version"] = kAbiVersion;
  m["mode"] = g.mode;
  m["inputs"] = OrderedJson::array();
  for (const auto& in : g.inputs()) m["inputs"].push_back(tensor_json(g, in.value));
  m["params"] = OrderedJson::array();
  for (const auto& pr : g.params()) {
    OrderedJson j = tensor_json(g, pr.value);
    j["path"] = pr.path;
    j["kind"] = pr.attribute ? "attribute" : pr.is_buffer ? "buffer" : "parameter";
    if (pr.complex_view) j["complex"] = true;
    m["params"].push_back(j);
  }
  m["outputs"] = OrderedJson::array();
  for (auto out : g.outputs()) m["outputs"].push_back(tensor_json(g, out));
  m["scratch_bytes"] = p.buffers.total_bytes();
  m["libraries"] = p.libraries;
  m["kernels"] = OrderedJson::array();
  for (const auto& c : p.calls) m["kernels"].push_back(c.kernel);
  m["functions"] = OrderedJson::array();  // per kernel above, the distinct source it runs
  for (const auto& c : p.calls) m["functions"].push_back(c.function);
  p.manifest = m;
  p.model_new_py = model_new_source(g, p, options);
  return p;
}

}  // namespace kforge::codegen
