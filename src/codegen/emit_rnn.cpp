// Recurrent family (`rnn`: nn.LSTM / GRU / RNN kept whole): one call of kf_cudnn_rnn (runtime/kforge_cudnn.cu),
// cuDNN's RNN API set up as torch sets it up, writing the packed output (output, h_n, then c_n for an lstm).
// TF32 as torch's default for cuDNN RNNs (torch.backends.cudnn.allow_tf32 = True): CUDNN_DEFAULT_MATH for
// precision fp32 and tf32, exact FMA math (CUDNN_FMA_MATH, torch with allow_tf32 = False) for 3xtf32.
#include <algorithm>
#include <climits>
#include <sstream>

#include "codegen/emit.h"
#include "ir/recurrent.h"

namespace kforge::codegen {

namespace {

std::string cudnn_cell_mode(ir::RnnMode m) {
  switch (m) {
    case ir::RnnMode::kRnnTanh: return "CUDNN_RNN_TANH";
    case ir::RnnMode::kRnnRelu: return "CUDNN_RNN_RELU";
    case ir::RnnMode::kLstm: return "CUDNN_LSTM";
    case ir::RnnMode::kGru: return "CUDNN_GRU";
  }
  return "CUDNN_LSTM";
}

// cuDNN's RNN API takes int sizes: every dim and every tensor it addresses must fit.
std::string int32_reason(const ir::RnnGeometry& r) {
  const int64_t wide = std::max(r.input_size, r.directions * r.hidden_size);
  for (int64_t v : {r.seq, r.batch, r.input_size, r.hidden_size, r.layers * r.directions, r.gates * r.hidden_size,
                    r.seq * r.batch * wide, r.state_numel()}) {
    if (v > INT_MAX) return "a size of this layer does not fit in int32 (cuDNN's RNN API takes int sizes)";
  }
  return "";
}

// Scratch to reserve for cuDNN's workspace: the gate pre-activations of all steps of a layer and direction,
// twice, at least 16 MiB and at most 2 GiB (a larger workspace comes from the runtime's grown buffer).
size_t workspace_estimate(const ir::RnnGeometry& r) {
  const int64_t gates_bytes = r.seq * r.batch * r.directions * r.gates * r.hidden_size * 4;
  return static_cast<size_t>(std::clamp<int64_t>(2 * gates_bytes, int64_t{16} << 20, int64_t{2} << 30));
}

}  // namespace

StatusOr<KernelSource> emit_Recurrent(const EmitContext& ctx) {
  KF_ASSIGN_OR_RETURN(ir::RnnGeometry r, ir::rnn_geometry(ctx.graph, ctx.node()));
  if (const std::string why = int32_reason(r); !why.empty()) return unsupported(ctx.kernel.name + ": " + why);
  const bool exact = ctx.sched.precision == "3xtf32";
  const int64_t weights = r.weight_count();
  std::ostringstream os;
  os << "namespace {\n"
     << "// torch's cuDNN setup for this layer (aten/src/ATen/native/cudnn/RNN.cpp), float32 inference.\n"
     << "const KfCudnnRnn kRnn = {\n"
     << "    \"" << ctx.kernel.name << "\",\n"
     << "    " << cudnn_cell_mode(r.mode) << ",  // cell_mode: " << ir::rnn_mode_name(r.mode) << "\n"
     << "    " << (exact ? "CUDNN_FMA_MATH" : "CUDNN_DEFAULT_MATH") << ",  // math_type: "
     << (exact ? "precision 3xtf32, exact fp32 (torch with allow_tf32 = False)"
               : "torch's default, TF32 allowed (torch.backends.cudnn.allow_tf32 = True)")
     << "\n"
     << "    " << r.input_size << ",  // input_size\n"
     << "    " << r.hidden_size << ",  // hidden_size\n"
     << "    " << r.layers << ",  // num_layers\n"
     << "    " << (r.directions == 2 ? 1 : 0) << ",  // bidirectional\n"
     << "    " << (r.batch_first ? 1 : 0) << ",  // batch_first\n"
     << "    " << (r.has_biases ? 1 : 0) << ",  // has_biases\n"
     << "    " << r.seq << ",  // seq\n"
     << "    " << r.batch << ",  // batch\n"
     << "    " << weights << ",  // num_weights\n"
     << "};\n"
     << "}  // namespace\n\n"
     << ctx.signature() << " {\n";
  const std::string x = ctx.in_ptr(0);
  const std::string h0 = ctx.has_input(1) ? ctx.in_ptr(1) : "nullptr";
  const std::string c0 = ctx.has_input(2) ? ctx.in_ptr(2) : "nullptr";
  os << "  const void* const weights[" << weights << "] = {";
  for (int64_t i = 0; i < weights; ++i) {
    os << (i % 4 == 0 ? (i ? ",\n      " : "\n      ") : ", ")
       << ctx.in_ptr(ir::kRnnFirstWeight + static_cast<size_t>(i));
  }
  os << "};\n"
     << "  float* out = " << ctx.out_ptr() << ";  // output (" << r.output_numel() << "), h_n (" << r.state_numel()
     << ")" << (r.has_cell() ? ", c_n (" + std::to_string(r.state_numel()) + ")" : "") << "\n"
     << "  return kf_cudnn_rnn(ctx, &kRnn, " << x << ", " << h0 << ", " << c0 << ", weights, out, out + "
     << r.output_numel() << "LL, "
     << (r.has_cell() ? "out + " + std::to_string(r.output_numel() + r.state_numel()) + "LL" : std::string("nullptr"))
     << ");\n"
     << "}\n";
  KernelSource src = begin_source(ctx, "#include <cudnn.h>\n");
  src.libraries = {"cudnn"};
  src.workspace_bytes = workspace_estimate(r);
  src.launches = 2;  // the weight copy and cuDNN's forward (itself several kernels per step)
  src.code += os.str();
  return src;
}

}  // namespace kforge::codegen
