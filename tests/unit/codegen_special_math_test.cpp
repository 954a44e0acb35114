// with_special_math: a kernel that calls a special function's helper gets its definition (and those it calls) after
// the runtime include, once, in an order that compiles; a kernel that calls none is unchanged.
#include <gtest/gtest.h>

#include "codegen/special_math.h"

namespace kforge::codegen {
namespace {

const char* kPrologue = "// kforge kernel k0\n#include \"kforge_runtime.cuh\"\n";

TEST(SpecialMath, CodeWithoutHelpersIsUnchanged) {
  const std::string code = std::string(kPrologue) + "__global__ void k(float* y) { y[0] = lgamma(y[0]); }\n";
  EXPECT_EQ(with_special_math(code), code);
}

TEST(SpecialMath, PolygammaBringsDigammaAndZetaFirst) {
  const std::string body = "__global__ void k(float* y) { y[0] = float(kf_polygamma(2.0f, double(y[0]))); }\n";
  const std::string out = with_special_math(std::string(kPrologue) + body);
  const size_t include = out.find("#include \"kforge_runtime.cuh\"");
  const size_t digamma = out.find("double kf_digamma(double x)");
  const size_t zeta = out.find("double kf_zeta(double x, double q)");
  const size_t polygamma = out.find("double kf_polygamma(double order, double x)");
  ASSERT_NE(digamma, std::string::npos);
  ASSERT_NE(zeta, std::string::npos);
  ASSERT_NE(polygamma, std::string::npos);
  EXPECT_LT(include, digamma);
  EXPECT_LT(digamma, polygamma);
  EXPECT_LT(zeta, polygamma);
  EXPECT_LT(polygamma, out.find(body));
  EXPECT_EQ(out.find("kf_i0e"), std::string::npos);  // only what the code needs
}

TEST(SpecialMath, EachHelperIsGuardedSoChunksDefineItOnce) {
  const std::string out = with_special_math(std::string(kPrologue) + "x = kf_i0e(a) + kf_i1e(b) + kf_zeta(c, d);\n");
  for (const char* guard : {"KF_SPECIAL_I0E", "KF_SPECIAL_I1E", "KF_SPECIAL_ZETA"}) {
    EXPECT_NE(out.find(std::string("#ifndef ") + guard), std::string::npos) << guard;
  }
  EXPECT_EQ(out.find("kf_digamma(double"), std::string::npos);
}

}  // namespace
}  // namespace kforge::codegen
