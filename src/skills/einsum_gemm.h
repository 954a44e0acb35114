// einsum_gemm: an einsum that is one (strided batched) GEMM on its operands as stored
// (ir::einsum_as_gemm: "bijl,lk->bijk", "bij,bjk->bik", "ik,jk->ij", ...) becomes a cuBLAS GEMM
// kernel (strategy cublas_gemm) in place of kforge's generated tiled contraction; tf32_contractions
// then applies to it like to any cuBLAS GEMM. The views and transposes fold into the GEMM's
// dimensions and operations: no data moves. Exact like torch's own einsum on cuBLAS (fp32 compute).
#pragma once

#include "skills/skill.h"

namespace kforge::skills {

// Site: one generated einsum kernel (kernels = {k}) of two floating operands of the output's dtype
// whose equation is a GEMM by ir::einsum_as_gemm.
std::vector<Site> einsum_gemm_sites(const ir::Graph& g, const schedule::Schedule& s);
StatusOr<schedule::Schedule> einsum_gemm(const ir::Graph& g, const schedule::Schedule& s, const Site& site);

}  // namespace kforge::skills
