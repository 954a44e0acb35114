// gemm_permuted_operands: a permute whose result only a cuBLAS matmul reads (x.transpose(-2, -1) before
// q @ k^T, a head split's permute(0, 2, 1, 3), A.T @ B) joins the matmul's kernel and is never copied:
// the GEMM reads the permute's input in place through its leading dimension, its transpose flag and
// per-batch strides or pointers (kernels/gemm_operands.h). Exact: the same products and sums as the GEMM
// on the copy.
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

// Legal when: the producer is a generated kernel of one permute; the consumer is a cuBLAS kernel whose
// root is a matmul and whose other nodes are permutes (a kernel this skill made); nothing outside the
// consumer reads the permute's result and it is not a graph output; and the joined kernel is of the form
// gemm_permuted_operands (the permuted operand's matrix has a dim at stride 1 in the stored tensor).
// Site: kernels = {permute kernel, matmul kernel}.
std::vector<Site> gemm_permuted_operands_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> gemm_permuted_operands(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
