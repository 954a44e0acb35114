// Fft family (fft_r2c, fft_c2c, fft_c2r): one cuFFT transform per kernel through kf_cufft_exec
// (runtime/kforge_cufft.cu), which keeps the plan; the kernel holds the transform's description.
#include <climits>
#include <sstream>

#include "codegen/emit.h"
#include "codegen/gather_kernel.h"

namespace kforge::codegen {

StatusOr<KernelSource> emit_Fft(const EmitContext& ctx) {
  const ir::Node& node = ctx.node();
  const ir::TensorType& in = ctx.in_type(0);
  const ir::TensorType& out = ctx.out_type();
  const int64_t k = node.attrs.i("ndim");
  const int kind = node.op == ir::OpId::kFftR2c   ? 0
                   : node.op == ir::OpId::kFftC2r ? 3
                   : node.attrs.b("inverse")      ? 2
                                                  : 1;
  // The transformed sizes: the real signal's (input of r2c, output of c2r), or the complex dims before the pair dim.
  const ir::Shape& signal = kind == 0 ? in.shape : out.shape;
  const size_t end = signal.size() - (kind == 1 || kind == 2 ? 1 : 0);
  if (k < 1 || k > 3 || end < static_cast<size_t>(k)) return internal_error("fft kernel of a shape its rule refuses");
  int64_t points = 1;
  std::vector<int64_t> n;
  for (size_t d = end - static_cast<size_t>(k); d < end; ++d) {
    n.push_back(signal[d]);
    points *= signal[d];
  }
  const int64_t real_numel = kind == 0 ? in.numel() : kind == 3 ? out.numel() : in.numel() / 2;
  const int64_t batch = points > 0 ? real_numel / points : 0;
  if (batch == 0) return layout::empty_kernel(ctx);  // a leading dim of 0
  if (batch > INT_MAX || points > INT_MAX)
    return unsupported("a Fourier transform of " + std::to_string(batch) + " x " + std::to_string(points) +
                       " points (cuFFT's plan takes 32-bit sizes)");
  KernelSource src = begin_source(ctx);
  src.libraries = {"cufft"};
  if (kind == 3) src.workspace_bytes = static_cast<size_t>(in.bytes());  // kf_cufft_exec copies the input there
  const char* kinds[] = {"real to complex", "complex forward", "complex inverse", "complex to real"};
  std::ostringstream os;
  os << "namespace {\n"
     << "// " << kinds[kind] << " over " << k << " dim(s) of " << ir::shape_str(signal) << ", " << batch
     << " transform(s)\n"
     << "const KfCufftTransform " << ctx.kernel.name << "_fft = {\"" << ctx.kernel.name << "\", " << kind << ", "
     << (in.dtype == ir::DType::kFloat64 ? 1 : 0) << ", " << k << ", {" << n[0] << ", " << (k > 1 ? n[1] : 0) << ", "
     << (k > 2 ? n[2] : 0) << "}, " << batch << "};\n"
     << "}  // namespace\n\n"
     << ctx.signature() << " {\n"
     << "  return kf_cufft_exec(ctx, &" << ctx.kernel.name << "_fft, " << ctx.in_ptr(0) << ", " << ctx.out_ptr()
     << ");\n"
     << "}\n";
  src.code += os.str();
  return src;
}

}  // namespace kforge::codegen
