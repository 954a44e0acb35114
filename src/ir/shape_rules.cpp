// Shape arithmetic: broadcasting, windows, reductions, einsum and matmul shapes.
#include "ir/shape_rules.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace kforge::ir {

StatusOr<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return invalid_argument("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Status check_window_params(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                           const std::vector<int64_t>& pad, const std::vector<int64_t>& dilation,
                           const std::vector<int64_t>& output_padding) {
  constexpr int64_t kMax = int64_t{1} << 31;
  auto in_range = [&](const std::vector<int64_t>& v, int64_t lo, const char* name) -> Status {
    for (int64_t x : v) {
      if (x < lo || x >= kMax)
        return invalid_argument(std::string(name) + " must be between " + std::to_string(lo) + " and 2^31, not " +
                                std::to_string(x));
    }
    return Status::ok();
  };
  KF_RETURN_IF_ERROR(in_range(kernel, 1, "kernel size"));
  KF_RETURN_IF_ERROR(in_range(stride, 1, "stride"));
  KF_RETURN_IF_ERROR(in_range(dilation, 1, "dilation"));
  KF_RETURN_IF_ERROR(in_range(pad, 0, "padding"));
  return in_range(output_padding, 0, "output_padding");
}

int64_t window_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode) {
  int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // torch: the last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

int64_t conv_transpose_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                                int64_t output_padding) {
  return (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_padding + 1;
}

StatusOr<std::vector<int64_t>> reduction_dims(const std::vector<int64_t>& dims, size_t rank) {
  std::set<int64_t> out;
  if (dims.empty()) {
    for (size_t i = 0; i < rank; ++i) out.insert(static_cast<int64_t>(i));
  }
  for (auto d : dims) {
    int64_t nd = d < 0 ? d + static_cast<int64_t>(rank) : d;
    if (nd < 0 || nd >= static_cast<int64_t>(std::max<size_t>(rank, 1))) {
      return invalid_argument("dim " + std::to_string(d) + " is out of range for a tensor of rank " +
                              std::to_string(rank));
    }
    out.insert(nd);
  }
  if (rank == 0) return std::vector<int64_t>{};
  return std::vector<int64_t>(out.begin(), out.end());
}

StatusOr<EinsumSpec> parse_einsum(const std::string& equation, size_t num_operands) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ') eq += c;
  }
  if (eq.find("...") != std::string::npos)
    return unsupported("einsum with '...' (ellipsis) is not supported yet: write the dims out");
  EinsumSpec spec;
  std::string lhs = eq;
  auto arrow = eq.find("->");
  bool explicit_out = arrow != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, arrow);
    spec.output = eq.substr(arrow + 2);
  }
  size_t start = 0;
  while (true) {
    auto comma = lhs.find(',', start);
    spec.operands.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (spec.operands.size() != num_operands) {
    return invalid_argument("einsum equation '" + equation + "' names " + std::to_string(spec.operands.size()) +
                            " operands but " + std::to_string(num_operands) + " were given");
  }
  for (const auto& s : spec.operands) {
    for (char c : s) {
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return invalid_argument("einsum equation '" + equation + "' has a bad subscript");
    }
  }
  if (!explicit_out) {
    std::map<char, int> count;
    for (const auto& s : spec.operands) {
      for (char c : s) ++count[c];
    }
    for (const auto& [c, n] : count) {
      if (n == 1) spec.output += c;
    }
  }
  return spec;
}

StatusOr<Shape> matmul_shape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) return invalid_argument("matmul needs operands of rank >= 1");
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  int64_t k_a = a2.back();
  int64_t k_b = b2[b2.size() - 2];
  if (k_a != k_b) {
    return invalid_argument("matmul of " + shape_str(a) + " and " + shape_str(b) + ": inner dims " +
                            std::to_string(k_a) + " and " + std::to_string(k_b) + " differ");
  }
  Shape batch_a(a2.begin(), a2.end() - 2);
  Shape batch_b(b2.begin(), b2.end() - 2);
  KF_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(batch_a, batch_b));
  if (a.size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) out.push_back(b2.back());
  return out;
}

StatusOr<EinsumGemm> einsum_as_gemm(const std::string& equation, const Shape& a, const Shape& b, const Shape& out) {
  KF_ASSIGN_OR_RETURN(EinsumSpec spec, parse_einsum(equation, 2));
  const std::string &ta = spec.operands[0], &tb = spec.operands[1], &to = spec.output;
  if (ta.size() != a.size() || tb.size() != b.size() || to.size() != out.size())
    return invalid_argument("einsum '" + equation + "': subscripts do not match the ranks");
  std::map<char, int64_t> size;
  auto record = [&](const std::string& term, const Shape& shape) -> Status {
    std::set<char> seen;
    for (size_t i = 0; i < term.size(); ++i) {
      if (!seen.insert(term[i]).second) return unsupported("a letter repeats within a term (a diagonal)");
      auto [it, fresh] = size.emplace(term[i], shape[i]);
      if (!fresh && it->second != shape[i]) return unsupported("sizes of a letter differ (a broadcast)");
      if (shape[i] == 0) return unsupported("an empty dim");
    }
    return Status::ok();
  };
  KF_RETURN_IF_ERROR(record(ta, a));
  KF_RETURN_IF_ERROR(record(tb, b));
  KF_RETURN_IF_ERROR(record(to, out));
  auto in = [](const std::string& t, char c) { return t.find(c) != std::string::npos; };
  std::string batch, m, n, k;  // each group in the output's order (k: in a's order)
  for (char c : to) {
    if (in(ta, c) && in(tb, c))
      batch += c;
    else if (in(ta, c))
      m += c;
    else if (in(tb, c))
      n += c;
    else
      return invalid_argument("output letter '" + std::string(1, c) + "' is in no operand");
  }
  for (char c : ta) {
    if (!in(to, c) && !in(tb, c)) return unsupported("a letter of a alone is summed before the product");
    if (!in(to, c)) k += c;
  }
  for (char c : tb) {
    if (!in(to, c) && !in(ta, c)) return unsupported("a letter of b alone is summed before the product");
  }
  if (to != batch + m + n) return unsupported("the output is not [batch, M, N]");
  EinsumGemm g;
  if (ta == batch + m + k) {
    g.trans_a = false;
  } else if (ta == batch + k + m) {
    g.trans_a = true;
  } else {
    return unsupported("a is not [batch, M, K] or [batch, K, M]");
  }
  if (tb == batch + k + n) {
    g.trans_b = false;
  } else if (tb == batch + n + k) {
    g.trans_b = true;
  } else {
    return unsupported("b is not [batch, K, N] or [batch, N, K]");
  }
  auto prod = [&](const std::string& letters) {
    int64_t p = 1;
    for (char c : letters) p *= size[c];
    return p;
  };
  g.batch = prod(batch);
  g.m = prod(m);
  g.n = prod(n);
  g.k = prod(k);
  return g;
}

}  // namespace kforge::ir
