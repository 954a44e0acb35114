// The 3xTF32 split (kernels/split_tf32.h, the kf_tf32_split3 kernel codegen/gemm_emit.cpp writes): its error
// bound per product, checked on the CPU by emulating TF32 (the same rounding as the kernel, and the tensor
// cores' truncation of the remainder), and the chunks of K the scratch allows.
#include "kernels/split_tf32.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "codegen/gemm_emit.h"

namespace kforge::kernels {
namespace {

// As the generated kf_tf32_split: round to nearest even at bit 13, cut where that would overflow.
float tf32_hi(float x) {
  if (!std::isfinite(x)) return x;
  const uint32_t u = std::bit_cast<uint32_t>(x);
  float hi = std::bit_cast<float>((u + 0x0FFFu + ((u >> 13) & 1u)) & 0xFFFFE000u);
  if (!std::isfinite(hi)) hi = std::bit_cast<float>(u & 0xFFFFE000u);
  return hi;
}

// The tensor cores read an fp32 operand as TF32 by dropping its low 13 bits.
float tf32_cut(float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xFFFFE000u);
}

// The three products the split GEMM sums for a * b, each exact in double (11 x 11 significant bits).
double split_product(float a, float b) {
  const float ah = tf32_hi(a), bh = tf32_hi(b);
  const float al = tf32_cut(a - ah), bl = tf32_cut(b - bh);
  return static_cast<double>(al) * bh + static_cast<double>(ah) * bl + static_cast<double>(ah) * bh;
}

TEST(SplitTf32, ProductErrorWithinTheStatedBound) {
  const double bound = (std::ldexp(1.0, -20) + std::ldexp(1.0, -22)) * (1 + std::ldexp(1.0, -11));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-60, 60);
  double worst = 0, worst_tf32 = 0;
  for (int i = 0; i < 2000000; ++i) {
    const float a = std::ldexp(mantissa(rng), exponent(rng)), b = std::ldexp(mantissa(rng), exponent(rng));
    const double exact = static_cast<double>(a) * b;
    if (exact == 0) continue;
    const double scale = std::abs(static_cast<double>(a)) * std::abs(static_cast<double>(b));
    worst = std::max(worst, std::abs(split_product(a, b) - exact) / scale);
    worst_tf32 = std::max(worst_tf32, std::abs(static_cast<double>(tf32_cut(a)) * tf32_cut(b) - exact) / scale);
  }
  EXPECT_LE(worst, bound);
  EXPECT_GT(worst, bound / 8) << "the bound should be near what the split reaches, not loose";
  EXPECT_GT(worst_tf32, 500 * worst) << "plain TF32 is about 2^-10 per product";
}

TEST(SplitTf32, EdgeValues) {
  const float big = std::numeric_limits<float>::max();
  EXPECT_EQ(tf32_hi(big), tf32_cut(big)) << "rounding up would overflow: cut instead";
  EXPECT_TRUE(std::isfinite(big - tf32_hi(big)));
  EXPECT_TRUE(std::isinf(tf32_hi(std::numeric_limits<float>::infinity())));
  EXPECT_EQ(tf32_hi(1.0f), 1.0f);
  const float x = 1.0f + std::ldexp(1.0f, -12);  // halfway below TF32's last bit: to even (1)
  EXPECT_EQ(tf32_hi(x), 1.0f);
  EXPECT_EQ(x - tf32_hi(x), std::ldexp(1.0f, -12));
}

TEST(SplitTf32, ChunksOfK) {
  auto one = split_tf32_chunks(2048, 2048, 2048);
  EXPECT_EQ(one.chunks, 1);
  EXPECT_EQ(one.k_chunk, 2048);
  EXPECT_EQ(one.scratch_bytes, 3 * 4 * 2048 * 4096);
  // one TF32 chain accumulates at most kSplitTf32MaxChainK of K (the tensor cores' accumulation bias)
  auto chained = split_tf32_chunks(1024, 2048, 32768);
  EXPECT_EQ(chained.k_chunk, kSplitTf32MaxChainK);
  EXPECT_EQ(chained.chunks, 16);
  // where the scratch cuts first: a multiple of 64 below 2^30 / (12 * (a_rows + b_cols))
  auto cut = split_tf32_chunks(int64_t{1} << 20, 768, 256);
  EXPECT_EQ(cut.k_chunk, 64);
  EXPECT_EQ(cut.chunks, 4);
  EXPECT_LE(cut.scratch_bytes, kSplitTf32ScratchBytes);
  // an odd K pads each copy to 16 floats (zeros), so the GEMM's rows stay 16-byte aligned
  EXPECT_EQ(split_tf32_chunks(8205, 5936, 2949).scratch_bytes, 3 * 4 * (8205 + 5936) * int64_t{2048});
  EXPECT_EQ(split_tf32_padded(2949), 2960);
  EXPECT_EQ(split_tf32_chunks(int64_t{1} << 30, int64_t{1} << 30, 4096).chunks, 0) << "not even 64 of K fits";
}

TEST(SplitTf32, GeneratedKernelRoundsAsEmulated) {
  // The emulation above must be the kernel's: the same constants in the text codegen writes.
  const std::string h = codegen::gemm::split_kernel_definition();
  EXPECT_NE(h.find("(u + 0x0FFFu + ((u >> 13) & 1u)) & 0xFFFFE000u"), std::string::npos);
  EXPECT_NE(h.find("if (!isfinite(hi)) hi = __uint_as_float(u & 0xFFFFE000u);"), std::string::npos);
  EXPECT_NE(h.find("dst[d] = j == lo_slot ? s.y : s.x;"), std::string::npos);
  EXPECT_NE(h.find(": make_float2(0.0f, 0.0f)"), std::string::npos) << "the K padding must be zeros";
}

}  // namespace
}  // namespace kforge::kernels
