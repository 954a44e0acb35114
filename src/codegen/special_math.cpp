// The special functions' device helpers (special_math.h), in double. The algorithms are the textbook ones torch's
// kernels use too: digamma by reflection, recurrence to x >= 10 and the asymptotic series; the Hurwitz zeta by a
// direct sum and the Euler-Maclaurin tail with the coefficients (2k)! / B_2k; polygamma from zeta; the scaled
// Bessel functions from CUDA's cyl_bessel_i0 / i1, and their asymptotic series where those overflow.
#include "codegen/special_math.h"

#include <array>

namespace kforge::codegen {

namespace {

struct Helper {
  const char* name;   // as the code calls it: "kf_zeta("
  const char* needs;  // the helpers it calls (defined before it in kHelpers), or ""
  const char* code;
};

constexpr std::array<Helper, 5> kHelpers = {{
    {"kf_digamma(", "",
     "#ifndef KF_SPECIAL_DIGAMMA\n"
     "#define KF_SPECIAL_DIGAMMA\n"
     "// psi(x): psi(+-0) = -+inf, a negative integer NaN (as torch); reflection below 0, the recurrence\n"
     "// psi(x) = psi(x + 1) - 1 / x up to 10, then ln x - 1 / (2x) - sum of B_2k / (2k x^2k) to k = 7.\n"
     "__device__ __noinline__ double kf_digamma(double x) {\n"
     "  if (x == 0.0) return copysign(INFINITY, -x);\n"
     "  double r = 0.0;\n"
     "  if (x < 0.0) {\n"
     "    if (x == trunc(x)) return NAN;\n"
     "    r = -3.14159265358979323846 / tan(3.14159265358979323846 * x);\n"
     "    x = 1.0 - x;\n"
     "  }\n"
     "  while (x < 10.0) {\n"
     "    r -= 1.0 / x;\n"
     "    x += 1.0;\n"
     "  }\n"
     "  const double z = 1.0 / (x * x);\n"
     "  const double tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 -\n"
     "                       z * (691.0 / 32760 - z * (1.0 / 12)))))));\n"
     "  return r + log(x) - 0.5 / x - tail;\n"
     "}\n"
     "#endif\n"},
    {"kf_zeta(", "",
     "#ifndef KF_SPECIAL_ZETA\n"
     "#define KF_SPECIAL_ZETA\n"
     "// Hurwitz zeta(x, q) = sum over k >= 0 of (k + q)^-x: inf at x = 1 and at q a non-positive integer, NaN for\n"
     "// x < 1 (as torch); the first terms summed directly (at least 9, up to q + k > 9), then the Euler-Maclaurin\n"
     "// tail with (2k)! / B_2k, k = 1..12, until a term is below double precision.\n"
     "__device__ __noinline__ double kf_zeta(double x, double q) {\n"
     "  if (x == 1.0) return INFINITY;\n"
     "  if (x < 1.0) return NAN;\n"
     "  if (q <= 0.0) {\n"
     "    if (q == floor(q)) return INFINITY;\n"
     "    if (x != floor(x)) return NAN;\n"
     "  }\n"
     "  const double kEps = 1.1102230246251565e-16;\n"
     "  const double kA[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1892437580.3183792,\n"
     "                         74724249600.0, -2950130727918.164, 116467828143500.67, -4597978722407473.0,\n"
     "                         1.8152105401943546e17, -7.166165256175667e18};\n"
     "  double s = pow(q, -x), a = q, b = 0.0;\n"
     "  int i = 0;\n"
     "  while (i < 9 || a <= 9.0) {\n"
     "    i += 1;\n"
     "    a += 1.0;\n"
     "    b = pow(a, -x);\n"
     "    s += b;\n"
     "    if (fabs(b / s) < kEps) return s;\n"
     "  }\n"
     "  const double w = a;\n"
     "  s += b * w / (x - 1.0);\n"
     "  s -= 0.5 * b;\n"
     "  double fac = 1.0, k = 0.0;\n"
     "  for (int j = 0; j < 12; ++j) {\n"
     "    fac *= x + k;\n"
     "    b /= w;\n"
     "    const double t = fac * b / kA[j];\n"
     "    s += t;\n"
     "    if (fabs(t / s) < kEps) return s;\n"
     "    k += 1.0;\n"
     "    fac *= x + k;\n"
     "    b /= w;\n"
     "    k += 1.0;\n"
     "  }\n"
     "  return s;\n"
     "}\n"
     "#endif\n"},
    {"kf_polygamma(", "kf_digamma( kf_zeta(",
     "#ifndef KF_SPECIAL_POLYGAMMA\n"
     "#define KF_SPECIAL_POLYGAMMA\n"
     "// The n-th derivative of psi: digamma for n = 0, else (-1)^(n + 1) n! zeta(n + 1, x).\n"
     "__device__ __noinline__ double kf_polygamma(double order, double x) {\n"
     "  const int n = (int)order;\n"
     "  if (n == 0) return kf_digamma(x);\n"
     "  double f = 1.0;\n"
     "  for (int k = 2; k <= n; ++k) f *= k;\n"
     "  return ((n % 2) ? f : -f) * kf_zeta(n + 1.0, x);\n"
     "}\n"
     "#endif\n"},
    {"kf_i0e(", "",
     "#ifndef KF_SPECIAL_I0E\n"
     "#define KF_SPECIAL_I0E\n"
     "// e^-|x| I0(x): CUDA's cyl_bessel_i0 below |x| = 700, the asymptotic series (1 + 1/8x + 9/128x^2 +\n"
     "// 225/3072x^3) / sqrt(2 pi x) above, where I0 overflows (the next term is below 5e-13 there).\n"
     "__device__ __noinline__ double kf_i0e(double x) {\n"
     "  const double ax = fabs(x);\n"
     "  if (ax < 700.0) return cyl_bessel_i0(x) * exp(-ax);\n"
     "  const double r = 1.0 / ax;\n"
     "  return (1.0 + r * (1.0 / 8 + r * (9.0 / 128 + r * (225.0 / 3072)))) / sqrt(6.283185307179586 * ax);\n"
     "}\n"
     "#endif\n"},
    {"kf_i1e(", "",
     "#ifndef KF_SPECIAL_I1E\n"
     "#define KF_SPECIAL_I1E\n"
     "// e^-|x| I1(x) (odd): CUDA's cyl_bessel_i1 below |x| = 700, the asymptotic series (1 - 3/8x - 15/128x^2 -\n"
     "// 315/3072x^3) / sqrt(2 pi x) above.\n"
     "__device__ __noinline__ double kf_i1e(double x) {\n"
     "  const double ax = fabs(x);\n"
     "  if (ax < 700.0) return cyl_bessel_i1(x) * exp(-ax);\n"
     "  const double r = 1.0 / ax;\n"
     "  const double v = (1.0 - r * (3.0 / 8 + r * (15.0 / 128 + r * (315.0 / 3072)))) / sqrt(6.283185307179586 * "
     "ax);\n"
     "  return x < 0.0 ? -v : v;\n"
     "}\n"
     "#endif\n"},
}};

}  // namespace

std::string with_special_math(const std::string& code) {
  // What the code calls, and what those call (polygamma: digamma and zeta); defined in kHelpers' order, which
  // puts each helper after those it calls.
  std::array<bool, kHelpers.size()> used{};
  for (size_t i = 0; i < kHelpers.size(); ++i) used[i] = code.find(kHelpers[i].name) != std::string::npos;
  for (size_t i = kHelpers.size(); i-- > 0;) {
    if (!used[i]) continue;
    for (size_t j = 0; j < kHelpers.size(); ++j) {
      if (std::string(kHelpers[i].needs).find(kHelpers[j].name) != std::string::npos) used[j] = true;
    }
  }
  std::string defs;
  for (size_t i = 0; i < kHelpers.size(); ++i) {
    if (used[i]) defs += kHelpers[i].code;
  }
  if (defs.empty()) return code;
  const std::string include = "#include \"kforge_runtime.cuh\"\n";
  const size_t at = code.find(include);
  if (at == std::string::npos) return defs + code;
  return code.substr(0, at + include.size()) + defs + code.substr(at + include.size());
}

}  // namespace kforge::codegen
