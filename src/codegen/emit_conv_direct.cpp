// The generated convolution kernels that do not call cuDNN (emit_conv.cpp chooses them): the direct
// kernel, one thread per output element gathering its window, for what cuDNN cannot take (and the
// knob direct = 1); and torch's exact depthwise design, which torch itself runs instead of cuDNN.
#include <climits>
#include <sstream>

#include "codegen/conv_common.h"

namespace kforge::codegen::conv {

// The direct kernel: one thread per output element, gathering its window.
std::string direct_kernel(const EmitContext& ctx, const ConvGeom& g, const std::string& T, const std::string& A,
                          bool has_bias) {
  std::ostringstream os;
  int64_t block = ctx.kernel.knob(schedule::Knob::kBlock, 256);
  const size_t sp = g.sp;
  os << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_direct(const " << T
     << "* __restrict__ x, const " << T << "* __restrict__ w, " << (has_bias ? "const " + T + "* __restrict__ b, " : "")
     << T << "* __restrict__ y) {\n"
     << "  KF_GRID_STRIDE(i, " << ctx.out_type().numel() << "LL) {\n"
     << "    int64_t r = i;\n";
  for (size_t d = sp; d-- > 0;) {
    os << "    const int64_t o" << d << " = r % " << g.out_sp[d] << "LL;\n"
       << "    r /= " << g.out_sp[d] << "LL;\n";
  }
  os << "    const int64_t co = r % " << g.cout << "LL;\n"
     << "    const int64_t n = r / " << g.cout << "LL;\n"
     << "    const int64_t grp = co / " << g.cout_g << "LL;\n"
     << "    " << A << " acc = 0;\n"
     << "    for (int64_t ci = 0; ci < " << g.cin_g << "LL; ++ci) {\n"
     << "      const " << T << "* xp = x + (n * " << g.cin << "LL + grp * " << g.cin_g << "LL + ci) * " << prod(g.in_sp)
     << "LL;\n";
  if (g.transpose) {
    // weight [Cin, Cout/groups, k...]
    os << "      const " << T << "* wp = w + ((grp * " << g.cin_g << "LL + ci) * " << g.cout_g << "LL + co % "
       << g.cout_g << "LL) * " << prod(g.k_sp) << "LL;\n";
  } else {
    // weight [Cout, Cin/groups, k...]
    os << "      const " << T << "* wp = w + (co * " << g.cin_g << "LL + ci) * " << prod(g.k_sp) << "LL;\n";
  }
  std::string ind = "      ";
  for (size_t d = 0; d < sp; ++d) {
    os << ind << "for (int64_t j" << d << " = 0; j" << d << " < " << g.k_sp[d] << "LL; ++j" << d << ") {\n";
    ind += "  ";
    if (g.transpose) {
      // y[o] gathers x[i] w[j] for o = i * stride - pad + j * dilation.
      os << ind << "const int64_t t" << d << " = o" << d << " + " << g.pad[d] << "LL - j" << d << " * " << g.dil[d]
         << "LL;\n"
         << ind << "if (t" << d << " < 0 || t" << d << " % " << g.stride[d] << "LL != 0) continue;\n"
         << ind << "const int64_t i" << d << " = t" << d << " / " << g.stride[d] << "LL;\n"
         << ind << "if (i" << d << " >= " << g.in_sp[d] << "LL) continue;\n";
    } else {
      os << ind << "const int64_t i" << d << " = o" << d << " * " << g.stride[d] << "LL - " << g.pad[d] << "LL + j" << d
         << " * " << g.dil[d] << "LL;\n"
         << ind << "if (i" << d << " < 0 || i" << d << " >= " << g.in_sp[d] << "LL) continue;\n";
    }
  }
  std::string xi = "i0", wi = "j0";
  for (size_t d = 1; d < sp; ++d) {
    xi = "(" + xi + ") * " + std::to_string(g.in_sp[d]) + "LL + i" + std::to_string(d);
    wi = "(" + wi + ") * " + std::to_string(g.k_sp[d]) + "LL + j" + std::to_string(d);
  }
  os << ind << "acc += (" << A << ")xp[" << xi << "] * (" << A << ")wp[" << wi << "];\n";
  for (size_t d = sp; d-- > 0;) {
    ind.resize(ind.size() - 2);
    os << ind << "}\n";
  }
  os << "    }\n";
  if (has_bias) os << "    acc += (" << A << ")b[co];\n";
  os << "    y[i] = (" << T << ")acc;\n"
     << "  }\n"
     << "}\n";
  return os.str();
}

// Depthwise as torch's ConvParams::is_depthwise has it (a 1-d conv counts: torch views it as 2-d
// before it chooses a backend).
bool is_depthwise(const ConvGeom& g) {
  return !g.transpose && g.groups > 1 && g.groups == g.cin && g.cout % g.cin == 0;
}

namespace {

// torch's CudaDepthwise2d/3d design: one thread per output element (n, c, spatial...), reading input
// channel c / multiplier; the accumulator starts at the bias, then adds weight * input over the
// window in order, each a fused multiply-add in fp32 (fp64 for fp64): exact, no TF32. 32-bit indices when
// both tensors have fewer than 2^31 elements.
std::string depthwise_kernel(const EmitContext& ctx, const ConvGeom& g, const std::string& T, const std::string& A,
                             bool has_bias) {
  const int64_t total = ctx.out_type().numel();
  const bool narrow = total <= INT_MAX && ctx.in_type(0).numel() <= INT_MAX;
  const std::string I = narrow ? "unsigned int" : "int64_t";  // element indices
  const std::string S = narrow ? "int" : "int64_t";           // window coordinates (may be negative)
  auto u = [&](int64_t x) { return std::to_string(x) + (narrow ? "u" : "LL"); };
  const int64_t block = ctx.kernel.knob(schedule::Knob::kBlock, 256);
  const size_t sp = g.sp;
  std::ostringstream os;
  os << "__global__ void __launch_bounds__(" << block << ") " << ctx.kernel.name << "_depthwise(const " << T
     << "* __restrict__ x, const " << T << "* __restrict__ w, " << (has_bias ? "const " + T + "* __restrict__ b, " : "")
     << T << "* __restrict__ y) {\n"
     << "  for (" << I << " i = blockIdx.x * (" << I << ")blockDim.x + threadIdx.x; i < " << u(total) << "; i += (" << I
     << ")gridDim.x * blockDim.x) {\n"
     << "    " << I << " r = i;\n";
  for (size_t d = sp; d-- > 0;) {
    os << "    const " << S << " o" << d << " = (" << S << ")(r % " << u(g.out_sp[d]) << ");\n"
       << "    r /= " << u(g.out_sp[d]) << ";\n";
  }
  os << "    const " << I << " c = r % " << u(g.cout) << ";\n"
     << "    const " << I << " n = r / " << u(g.cout) << ";\n"
     << "    const " << T << "* xp = x + (n * " << u(g.cin) << " + c / " << u(g.cout / g.cin) << ") * "
     << u(prod(g.in_sp)) << ";\n"
     << "    const " << T << "* wp = w + c * " << u(prod(g.k_sp)) << ";\n"
     << "    " << A << " acc = " << (has_bias ? "(" + A + ")b[c]" : "(" + A + ")0") << ";\n";
  std::string ind = "    ";
  for (size_t d = 0; d < sp; ++d) {
    os << ind << "#pragma unroll\n"
       << ind << "for (int j" << d << " = 0; j" << d << " < " << g.k_sp[d] << "; ++j" << d << ") {\n";
    ind += "  ";
    os << ind << "const " << S << " i" << d << " = o" << d << " * " << g.stride[d] << " - " << g.pad[d] << " + j" << d
       << " * " << g.dil[d] << ";\n"
       << ind << "if (i" << d << " < 0 || i" << d << " >= " << g.in_sp[d] << ") continue;\n";
  }
  std::string xi = "(" + I + ")i0", wi = "j0";
  for (size_t d = 1; d < sp; ++d) {
    xi = "(" + xi + ") * " + u(g.in_sp[d]) + " + (" + I + ")i" + std::to_string(d);
    wi = "(" + wi + ") * " + std::to_string(g.k_sp[d]) + " + j" + std::to_string(d);
  }
  os << ind << "acc += (" << A << ")wp[" << wi << "] * (" << A << ")xp[" << xi << "];\n";
  for (size_t d = sp; d-- > 0;) {
    ind.resize(ind.size() - 2);
    os << ind << "}\n";
  }
  os << "    y[i] = (" << T << ")acc;\n"
     << "  }\n"
     << "}\n";
  return os.str();
}

}  // namespace

std::string depthwise_code(const EmitContext& ctx, const ConvGeom& g, const std::string& T, const std::string& A,
                           bool has_bias) {
  const int64_t block = ctx.kernel.knob(schedule::Knob::kBlock, 256);
  std::ostringstream os;
  os << "// Depthwise: torch runs its own exact kernel here (CudaDepthwise" << (g.sp == 3 ? 3 : 2)
     << "d), not cuDNN; so does this.\n"
     << "namespace {\n"
     << depthwise_kernel(ctx, g, T, A, has_bias) << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  " << ctx.kernel.name << "_depthwise<<<kf_grid(" << ctx.out_type().numel() << "LL, " << block << "), "
     << block << ", 0, ctx->stream>>>(" << ctx.in_ptr(0) << ", " << ctx.in_ptr(1) << ", "
     << (has_bias ? ctx.in_ptr(2) + ", " : "") << ctx.out_ptr() << ");\n"
     << "  KF_LAUNCHED();\n"
     << "  return 0;\n"
     << "}\n";
  return os.str();
}

}  // namespace kforge::codegen::conv
