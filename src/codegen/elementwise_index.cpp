// Broadcast offsets as straight-line index arithmetic with the shapes baked in.
#include "codegen/elementwise_index.h"

#include <climits>
#include <sstream>

namespace kforge::codegen {

std::vector<int64_t> contiguous_strides(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

namespace {

// Index arithmetic in 32 bits when every index of `out` fits: a division by a constant is then one
// multiply-high instead of a 64-bit sequence, per element of every broadcast operand.
struct IndexMath {
  std::string i, suffix;
  IndexMath(const ir::Shape& out, const std::string& index) {
    const bool narrow = ir::TensorType{out, ir::DType::kFloat32}.numel() <= int64_t{INT32_MAX};
    i = narrow ? "(unsigned)(" + index + ")" : index;
    suffix = narrow ? "u" : "LL";
  }
  std::string k(int64_t v) const { return std::to_string(v) + suffix; }
};

}  // namespace

std::string broadcast_offset(const ir::Shape& in, const ir::Shape& out, const std::string& index) {
  ir::TensorType ti{in, ir::DType::kFloat32};
  if (in == out) return index;
  if (ti.numel() == 1) return "0";
  const IndexMath m(out, index);
  const std::string& i = m.i;
  size_t lead = out.size() - in.size();
  auto in_strides = contiguous_strides(in);
  auto out_strides = contiguous_strides(out);
  // Trailing run of matching dims folds into one modulo: offset = i % (product) when the input is a
  // suffix of the output (e.g. bias [C] over [N, C]).
  bool suffix = true;
  for (size_t d = 0; d < in.size(); ++d) suffix = suffix && in[d] == out[lead + d];
  if (suffix) return "(" + i + " % " + m.k(ti.numel()) + ")";
  std::ostringstream os;
  os << "(";
  bool first = true;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    size_t od = lead + d;
    if (!first) os << " + ";
    first = false;
    os << "((" << i << " / " << m.k(out_strides[od]) << ") % " << m.k(out[od]) << ") * " << m.k(in_strides[d]);
  }
  if (first) os << "0";
  os << ")";
  return os.str();
}

std::string strided_offset(const ir::StridedView& view, const ir::Shape& out, const std::string& index) {
  // (size, stride into the source) per dim of `out`, outer to inner; a broadcast dim has stride 0. Neighbours
  // that walk memory as one dim (outer stride = inner stride * inner size) merge into one.
  std::vector<std::pair<int64_t, int64_t>> dims;
  const size_t lead = out.size() - view.shape.size();
  for (size_t od = 0; od < out.size(); ++od) {
    const bool present = od >= lead && view.shape[od - lead] != 1;
    const int64_t stride = present ? view.strides[od - lead] : 0;
    if (out[od] == 1) continue;
    if (!dims.empty() && dims.back().second == stride * out[od]) {
      dims.back() = {dims.back().first * out[od], stride};
    } else {
      dims.emplace_back(out[od], stride);
    }
  }
  const IndexMath m(out, index);
  std::ostringstream os;
  os << "(" << view.offset << "LL";
  int64_t inner = 1;  // the product of the sizes inside the current dim
  for (size_t d = dims.size(); d-- > 0;) {
    const auto [size, stride] = dims[d];
    if (stride != 0) {
      std::string idx = m.i;
      if (inner != 1) idx = "(" + idx + " / " + m.k(inner) + ")";
      if (d != 0) idx = "(" + idx + " % " + m.k(size) + ")";
      os << " + (long long)" << idx << (stride == 1 ? "" : " * " + std::to_string(stride) + "LL");
    }
    inner *= size;
  }
  os << ")";
  return os.str();
}

std::string channel_offset(const ir::Shape& out, const std::string& index) {
  int64_t inner = 1;
  for (size_t d = 2; d < out.size(); ++d) inner *= out[d];
  const IndexMath m(out, index);
  const std::string channels = m.k(out.size() > 1 ? out[1] : 1);
  if (inner == 1) return "(" + m.i + " % " + channels + ")";
  return "((" + m.i + " / " + m.k(inner) + ") % " + channels + ")";
}

ir::Shape channel_shape(const ir::Shape& out) {
  ir::Shape s(out.size(), 1);
  if (out.size() > 1) s[1] = out[1];
  return s;
}

bool row_invariant_offset(const ir::Shape& in, const ir::Shape& out, int64_t row) {
  if (row <= 0 || in.size() > out.size()) return false;
  const auto out_strides = contiguous_strides(out);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != 1 && out_strides[lead + d] % row != 0) return false;
  }
  return true;
}

}  // namespace kforge::codegen
