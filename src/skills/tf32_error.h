// The TF32 error estimate: how far a graph's outputs move when some of its contractions round their
// operands to TF32 (10 mantissa bits), against the protocol's tolerance. The precision skills
// (tf32_contractions, and the conv skills that leave torch's cuDNN engine) are legal only where it
// fits: a tolerance of 1e-2 absorbs TF32 after one GEMM of unit-scale values, not after a sum over
// thousands of its outputs, which adds their errors (issue #21: GEMM -> divide -> sum -> scale gave
// a max abs error of 2.58 under 1e-2).
//
// Model (a statistical estimate with stated assumptions, not a worst-case bound):
//  - every value has a distribution (mean and standard deviation of its elements) and an error (the
//    standard deviation of its difference from the exact-fp32 computation). Inputs take theirs from
//    get_inputs() (zero mean, unit scale when unknown); weights and biases of linear and conv torch's
//    default init (uniform +-1/sqrt(fan_in)); other parameters zero mean, unit scale; errors start at 0;
//  - a contraction of reduction length K in TF32 adds sqrt(2/3) 2^-11 sqrt(K) rms(a) rms(b) (both
//    operands rounded to nearest, the products' errors independent), and carries its operands' errors;
//  - ops carry errors by their Lipschitz constants (a sum over N: sqrt(N), independent errors; a mean:
//    1/sqrt(N); amax, softmax, pools, layout: 1; norms: over the input's spread); an op whose output can
//    jump under a small change of its input (comparisons, argmax, sign, division by a tensor, log,
//    sqrt, prod) makes a nonzero error unbounded;
//  - verification fails an element when |err| > atol + rtol |ref| (torch.allclose); with err and ref
//    independent normals that has a probability per element, and the expected number of failing
//    elements over the protocol's input sets must stay below kTf32AllowedFailures, the errors widened
//    by kTf32ErrorMargin first (for what the model leaves out: cuBLAS's split reductions, correlated
//    roundings).
// Checked against GPU runs: level1/1 (4096^3 GEMM of rand inputs, all outputs near 1024: legal; max abs
// error 0.059 measured) and the sum of issue #21 (illegal).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "schedule/schedule.h"

namespace kforge::skills {

inline constexpr double kTf32UnitRoundoff = 1.0 / 2048.0;  // 2^-11: round to nearest, 10 mantissa bits
inline constexpr double kTf32ErrorMargin = 2.0;            // errors widened by this before the check
inline constexpr double kTf32VerifiedInputSets = 5;        // the harness's fresh input sets per verification
inline constexpr double kTf32AllowedFailures = 0.01;       // expected failing elements over those sets

// 3xTF32 (kernels/split_tf32.h) on a contraction: a product's error is below 1.25 2^-20 |a||b|; taken as
// 2^-20 rms(a) rms(b) per product (a bound used as a standard deviation: conservative), plus the
// difference of two fp32 accumulation orders (torch's GEMM and the split one): each rounds every partial
// sum within 2^-24 of it, a standard deviation of 2^-24/sqrt(3) |S_k| per step, summed over the K steps. (The
// tensor cores' accumulation bias, kernels/split_tf32.h, scales same-signed sums alike; the skill bounds it.)
inline constexpr double kSplitTf32ProductError = 1.0 / 1048576.0;  // 2^-20
inline constexpr double kFp32UnitRoundoff = 1.0 / 16777216.0;      // 2^-24

struct Tf32ErrorEstimate {
  double expected_failures = 0;  // the most expected failing elements of one output
  double sigma = 0;              // that output's error (standard deviation, margin included)
  std::string output;            // that output's id ("" when no output has an error)
  std::vector<double> error;     // per graph value (Graph::values()), without the margin
};

// The estimate when the nodes `tf32_nodes` (indices into g.nodes(): linear, matmul, einsum, conv,
// conv_transpose, scaled_dot_product_attention) compute in TF32 and every other node in fp32.
// `split_nodes` (linear, matmul, einsum) compute in 3xTF32.
Tf32ErrorEstimate estimate_tf32_error(const ir::Graph& g, const std::vector<int>& tf32_nodes, double atol, double rtol,
                                      const std::vector<int>& split_nodes = {});

// The contraction node (linear, matmul, einsum, conv, conv_transpose, attention) of kernel k, or -1.
int contraction_node_of(const ir::Graph& g, const schedule::Kernel& k);

// The contraction nodes that schedule s already computes in TF32 other than the reference does:
// every float32 cuBLAS kernel's root under precision tf32, and convolutions whose kernel leaves
// torch's cuDNN engine (knobs channels_last, engine_search, implicit_gemm).
std::vector<int> tf32_nodes_of(const ir::Graph& g, const schedule::Schedule& s);

// The contraction nodes that schedule s computes in 3xTF32: every float32 cuBLAS GEMM kernel's (not
// attention's: its batched GEMMs stay exact fp32) under precision 3xtf32.
std::vector<int> split_tf32_nodes_of(const ir::Graph& g, const schedule::Schedule& s);

// Why running `extra` in TF32 (and `extra_split` in 3xTF32) beside what s already runs so would not fit
// s's tolerance ("" when it fits): names the output, the estimate and the tolerance.
std::string tf32_error_exceeds_tolerance(const ir::Graph& g, const schedule::Schedule& s, const std::vector<int>& extra,
                                         const std::vector<int>& extra_split = {});

}  // namespace kforge::skills
