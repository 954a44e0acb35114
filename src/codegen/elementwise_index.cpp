// Broadcast offsets as straight-line index arithmetic with the shapes baked in.
#include "codegen/elementwise_index.h"

#include <sstream>

namespace kforge::codegen {

std::vector<int64_t> contiguous_strides(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

std::string broadcast_offset(const ir::Shape& in, const ir::Shape& out, const std::string& i) {
  ir::TensorType ti{in, ir::DType::kFloat32};
  if (in == out) return i;
  if (ti.numel() == 1) return "0";
  size_t lead = out.size() - in.size();
  auto in_strides = contiguous_strides(in);
  auto out_strides = contiguous_strides(out);
  // Trailing run of matching dims folds into one modulo: offset = i % (product) when the input is a
  // suffix of the output (e.g. bias [C] over [N, C]).
  bool suffix = true;
  for (size_t d = 0; d < in.size(); ++d) suffix = suffix && in[d] == out[lead + d];
  if (suffix) return "(" + i + " % " + std::to_string(ti.numel()) + "LL)";
  std::ostringstream os;
  os << "(";
  bool first = true;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    size_t od = lead + d;
    if (!first) os << " + ";
    first = false;
    os << "((" << i << " / " << out_strides[od] << "LL) % " << out[od] << "LL) * " << in_strides[d] << "LL";
  }
  if (first) os << "0";
  os << ")";
  return os.str();
}

std::string channel_offset(const ir::Shape& out, const std::string& i) {
  int64_t inner = 1;
  for (size_t d = 2; d < out.size(); ++d) inner *= out[d];
  const std::string channels = std::to_string(out.size() > 1 ? out[1] : 1);
  if (inner == 1) return "(" + i + " % " + channels + "LL)";
  return "((" + i + " / " + std::to_string(inner) + "LL) % " + channels + "LL)";
}

}  // namespace kforge::codegen
