// Matmul operands through permutes: strides, matrix layouts and the form gemm_permuted_operands.
#include "kernels/gemm_operands.h"

#include <algorithm>
#include <set>

#include "ir/shape_rules.h"

namespace kforge::kernels {

namespace {

const ir::Node& node_at(const ir::Graph& g, int n) {
  return g.nodes()[static_cast<size_t>(n)];
}

// The node of k whose output is v, or -1.
int maker_in(const ir::Graph& g, const schedule::Kernel& k, ir::ValueIndex v) {
  for (int n : k.nodes) {
    if (node_at(g, n).output == v) return n;
  }
  return -1;
}

bool is_matmul_root(const ir::Graph& g, const schedule::Kernel& k) {
  return !k.nodes.empty() && node_at(g, k.root()).op == ir::OpId::kMatmul && node_at(g, k.root()).inputs.size() >= 2;
}

// Operand i with the permute nodes it was read through (nodes of k).
StridedOperand walk(const ir::Graph& g, const schedule::Kernel& k, size_t i, std::set<int>* through) {
  StridedOperand op;
  const ir::Node& root = node_at(g, k.root());
  ir::ValueIndex v = root.inputs.at(i);
  op.shape = g.type(v).shape;
  const size_t rank = op.shape.size();
  // dim_of[j]: the dim of the current tensor that logical dim j is.
  std::vector<size_t> dim_of(rank);
  for (size_t j = 0; j < rank; ++j) dim_of[j] = j;
  for (int n = maker_in(g, k, v); n >= 0 && n != k.root(); n = maker_in(g, k, v)) {
    const ir::Node& p = node_at(g, n);
    if (p.op != ir::OpId::kPermute || p.inputs.empty()) break;
    const auto& dims = p.attrs.ints("dims");
    if (dims.size() != rank) break;
    for (auto& d : dim_of) {
      int64_t src = dims[d];
      if (src < 0) src += static_cast<int64_t>(rank);
      d = static_cast<size_t>(src);
    }
    v = p.inputs[0];
    ++op.permutes;
    if (through != nullptr) through->insert(n);
  }
  op.source = v;
  const ir::Shape& stored = g.type(v).shape;
  std::vector<int64_t> contiguous(stored.size(), 1);
  for (size_t d = stored.size(); d-- > 1;) contiguous[d - 1] = contiguous[d] * stored[d];
  op.strides.resize(rank);
  for (size_t j = 0; j < rank; ++j) op.strides[j] = contiguous.at(dim_of[j]);
  return op;
}

// Read only by nodes of k, and not a graph output.
bool read_only_inside(const ir::Graph& g, const schedule::Kernel& k, ir::ValueIndex v) {
  for (auto o : g.outputs()) {
    if (o == v) return false;
  }
  for (int user : g.users(v)) {
    if (std::find(k.nodes.begin(), k.nodes.end(), user) == k.nodes.end()) return false;
  }
  return true;
}

}  // namespace

StridedOperand gemm_operand(const ir::Graph& g, const schedule::Kernel& k, size_t i) {
  return walk(g, k, i, nullptr);
}

MatrixLayout matrix_layout(const StridedOperand& op) {
  MatrixLayout out;
  const size_t r = op.shape.size();
  if (r < 2) return out;
  const int64_t rows = op.shape[r - 2], cols = op.shape[r - 1];
  int64_t s_rows = op.strides[r - 2], s_cols = op.strides[r - 1];
  if (rows == 0 || cols == 0) {  // nothing is read (an empty contraction or result)
    out.ok = true;
    out.ld = std::max<int64_t>(cols, 1);
    return out;
  }
  // A dim of size 1 is never stepped: its stride is free.
  if (cols == 1) s_cols = 1;
  if (s_cols == 1) {
    out.ld = rows == 1 ? std::max<int64_t>(cols, 1) : s_rows;
    out.ok = out.ld >= std::max<int64_t>(cols, 1);
    return out;
  }
  if (rows == 1) s_rows = 1;
  if (s_rows == 1) {
    out.transposed = true;
    out.ld = s_cols;
    out.ok = out.ld >= std::max<int64_t>(rows, 1);
  }
  return out;
}

bool uniform_batch_stride(const StridedOperand& op, const ir::Shape& batch, int64_t* stride) {
  const size_t r = op.shape.size();
  const size_t own = r >= 2 ? r - 2 : 0;  // the operand's batch dims, aligned right against `batch`
  if (own > batch.size()) return false;
  int64_t step = 1;  // flat batch index per step of batch dim j
  bool known = false;
  int64_t s = 0;
  for (size_t j = batch.size(); j-- > 0;) {
    const size_t back = batch.size() - 1 - j;
    if (batch[j] > 1) {
      int64_t st = 0;
      if (back < own && op.shape[own - 1 - back] > 1) st = op.strides[own - 1 - back];
      if (!known) {
        if (st % step != 0) return false;
        s = st / step;
        known = true;
      } else if (st != s * step) {
        return false;
      }
    }
    step *= std::max<int64_t>(batch[j], 1);
  }
  if (stride != nullptr) *stride = s;
  return true;
}

StridedOperand as_matrix(StridedOperand op, bool is_a) {
  if (op.shape.size() != 1) return op;
  const int64_t n = op.shape[0];
  op.shape = is_a ? ir::Shape{1, n} : ir::Shape{n, 1};
  op.strides = is_a ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{1, 1};
  return op;
}

GemmBatchPlan gemm_batch_plan(const ir::Graph& g, const schedule::Kernel& k) {
  GemmBatchPlan p;
  if (!is_matmul_root(g, k)) return p;
  p.a = as_matrix(gemm_operand(g, k, 0), true);
  p.b = as_matrix(gemm_operand(g, k, 1), false);
  if (p.a.shape.size() < 2 || p.b.shape.size() < 2) return p;
  p.la = matrix_layout(p.a);
  p.lb = matrix_layout(p.b);
  if (!p.la.ok || !p.lb.ok) return p;
  const ir::Shape batch_a(p.a.shape.begin(), p.a.shape.end() - 2), batch_b(p.b.shape.begin(), p.b.shape.end() - 2);
  auto batch = ir::broadcast_shapes(batch_a, batch_b);
  if (!batch.is_ok()) return p;
  p.batch = batch.value();
  const auto count = [](const ir::Shape& s) {
    int64_t n = 1;
    for (auto d : s) n *= d;
    return n;
  };
  const int64_t rows = p.a.shape[p.a.shape.size() - 2];
  p.k = p.a.shape.back();
  p.n = p.b.shape.back();
  p.ok = true;
  int64_t run = 0;
  if (count(batch_b) == 1 && !p.la.transposed && uniform_batch_stride(p.a, batch_a, &run) &&
      (count(batch_a) == 1 || run == rows * p.la.ld)) {
    p.kind = GemmBatchPlan::Kind::kOneGemm;
    p.m = count(batch_a) * rows;
    return p;
  }
  p.m = rows;
  p.batches = count(p.batch);
  p.kind = uniform_batch_stride(p.a, p.batch, &p.stride_a) && uniform_batch_stride(p.b, p.batch, &p.stride_b)
               ? GemmBatchPlan::Kind::kStrided
               : GemmBatchPlan::Kind::kPointers;
  return p;
}

bool is_gemm_permuted_operands(const ir::Graph& g, const schedule::Kernel& k) {
  if (k.impl != schedule::Impl::kLibrary || k.strategy != schedule::Strategy::kCublasGemm || k.nodes.size() < 2 ||
      !is_matmul_root(g, k))
    return false;
  std::set<int> through;
  for (size_t i = 0; i < 2; ++i) {
    const StridedOperand op = walk(g, k, i, &through);
    if (op.permutes == 0) continue;
    if (op.shape.size() < 2 || !matrix_layout(op).ok) return false;
  }
  // Every other node is one of the permutes read through, and nothing outside the kernel reads them.
  if (through.size() + 1 != k.nodes.size()) return false;
  for (int n : through) {
    if (!read_only_inside(g, k, node_at(g, n).output)) return false;
  }
  return true;
}

}  // namespace kforge::kernels
