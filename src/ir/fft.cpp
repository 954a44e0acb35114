// Shape rule of the Fft family (fft_r2c, fft_c2c, fft_c2r): complex tensors as real ones with a trailing dim
// of 2, ndim (1 to 3, as one cuFFT plan) trailing dims transformed; float32 and float64 only (cuFFT's types).
#include <string>

#include "ir/infer_args.h"

namespace kforge::ir {

StatusOr<TensorType> infer_Fft(const InferArgs& x) {
  const TensorType& in = x.in(0);
  const int64_t k = x.a().i("ndim");
  const std::string name(op_info(x.node.op).name);
  if (in.dtype != DType::kFloat32 && in.dtype != DType::kFloat64)
    return invalid_argument(name + " of " + std::string(dtype_name(in.dtype)) +
                            " (cuFFT transforms float32 and float64; cast first)");
  if (k < 1 || k > 3) return invalid_argument(name + " of " + std::to_string(k) + " dims (1 to 3 in one transform)");
  const bool complex_in = x.node.op != OpId::kFftR2c;
  const size_t need = static_cast<size_t>(k) + (complex_in ? 1 : 0);
  if (in.shape.size() < need || (complex_in && in.shape.back() != 2))
    return invalid_argument(name + " needs " + std::to_string(k) + " transformed dim(s)" +
                            (complex_in ? " and a trailing (re, im) dim of 2" : "") + ", got " + shape_str(in.shape));
  Shape out = in.shape;
  const size_t last = in.shape.size() - (complex_in ? 2 : 1);  // the last transformed dim
  for (size_t d = last + 1 - static_cast<size_t>(k); d <= last; ++d) {
    if (in.shape[d] < 1) return invalid_argument(name + " of an empty dim in " + shape_str(in.shape));
  }
  switch (x.node.op) {
    case OpId::kFftR2c:
      out[last] = in.shape[last] / 2 + 1;
      out.push_back(2);
      break;
    case OpId::kFftC2r: {
      const int64_t n = x.a().i("last_dim_size");
      if (n < 1 || n / 2 + 1 != in.shape[last])
        return invalid_argument("fft_c2r to a last dim of " + std::to_string(n) + " needs " +
                                std::to_string(n / 2 + 1) + " one-sided points there, got " + shape_str(in.shape));
      out.pop_back();
      out[last] = n;
      break;
    }
    default: break;
  }
  return TensorType{out, in.dtype};
}

}  // namespace kforge::ir
