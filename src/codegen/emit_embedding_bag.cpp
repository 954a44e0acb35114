// embedding_bag: one thread per output element (bag, feature) walks its bag's indices in order and pools
// the picked rows' feature (sum, mean or max, accumulated in float, double for float64), as torch's CUDA
// kernel does per feature; an empty bag is zero. An index outside the table or an offset outside the
// index traps (torch raises).
#include <algorithm>
#include <sstream>

#include "codegen/gather_kernel.h"

namespace kforge::codegen {

StatusOr<KernelSource> emit_embedding_bag(const EmitContext& ctx) {
  using layout::Index;
  const ir::Shape& w = ctx.in_type(0).shape;
  const int64_t V = w[0], D = w[1];
  const ir::TensorType& index = ctx.in_type(1);
  const int64_t N = index.numel();
  const int64_t total = ctx.out_type().numel();
  if (total == 0) return layout::empty_kernel(ctx);
  const std::string& mode = ctx.node().attrs.s("mode");
  const ir::DType t = ctx.out_type().dtype;
  const std::string acc = t == ir::DType::kFloat64 ? "double" : "float";
  const std::string load = layout::is_half(t) ? "(float)" : "";
  Index ix = layout::index_for(std::max({total, ctx.in_type(0).numel(), N}));
  std::ostringstream body;
  body << "    const int64_t bag = (int64_t)i / " << D << "LL, f = (int64_t)i % " << D << "LL;\n";
  if (ctx.has_input(2)) {
    const int64_t offsets = ctx.in_type(2).numel();
    body << "    const int64_t start = (int64_t)in2[bag];\n"
         << "    const int64_t end = bag + 1 < " << offsets << "LL ? (int64_t)in2[bag + 1] : " << N << "LL;\n"
         << "    if (start < 0 || end > " << N << "LL || start > end) __trap();  // torch raises on such offsets\n";
  } else {
    const int64_t L = index.shape[1];
    body << "    const int64_t start = bag * " << L << "LL, end = start + " << L << "LL;\n";
  }
  // Eight rows' loads in flight at once (each thread's bag is a chain of dependent loads otherwise), combined
  // in the bag's order: the same additions in the same order as one row at a time.
  auto combine = [&](const std::string& v, const std::string& at) {
    return mode == "max" ? "if (" + at + " == start || " + v + " > a) a = " + v + ";" : "a += " + v + ";";
  };
  const std::string check = "__trap();  // torch raises on an out-of-range index";
  body << "    " << acc << " a = 0;\n"
       << "    int64_t p = start;\n"
       << "    for (; p + 8 <= end; p += 8) {\n"
       << "      int64_t k[8];\n"
       << "      " << acc << " v[8];\n"
       << "#pragma unroll\n"
       << "      for (int u = 0; u < 8; ++u) {\n"
       << "        k[u] = (int64_t)in1[p + u];\n"
       << "        if (k[u] < 0 || k[u] >= " << V << "LL) " << check << "\n"
       << "      }\n"
       << "#pragma unroll\n"
       << "      for (int u = 0; u < 8; ++u) v[u] = (" << acc << ")" << load << "in0[k[u] * " << D << "LL + f];\n"
       << "#pragma unroll\n"
       << "      for (int u = 0; u < 8; ++u) { " << combine("v[u]", "p + u") << " }\n"
       << "    }\n"
       << "    for (; p < end; ++p) {\n"
       << "      const int64_t k = (int64_t)in1[p];\n"
       << "      if (k < 0 || k >= " << V << "LL) " << check << "\n"
       << "      const " << acc << " v = (" << acc << ")" << load << "in0[k * " << D << "LL + f];\n"
       << "      " << combine("v", "p") << "\n"
       << "    }\n";
  if (mode == "mean") body << "    if (end > start) a = a / (" << acc << ")(end - start);\n";
  body << "    out[i] = " << layout::convert("a", t == ir::DType::kFloat64 ? t : ir::DType::kFloat32, t) << ";\n";
  return layout::gather_kernel(ctx, ix, body.str(),
                               "embedding_bag (" + mode + ") of " + std::to_string(total / D) + " bags over " +
                                   std::to_string(N) + " indices into a table of " + std::to_string(V) + " x " +
                                   std::to_string(D));
}

}  // namespace kforge::codegen
