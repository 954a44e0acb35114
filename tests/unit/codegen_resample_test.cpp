// Codegen of bicubic upsampling and grid_sample (Resample family, emit_resample.cpp and
// emit_grid_sample.cpp): the planner's choice, the source-coordinate arithmetic torch's CUDA kernels use
// (written in the same steps and types), and nvcc builds of every mode, padding and dtype.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen_test_graphs.h"
#include "test_util.h"

namespace kforge::codegen {
namespace {

using testing::code_of;
using testing::emit;
using testing::has;
using testing::In;
using testing::make_graph;
using testing::Op;

TEST(CodegenResample, PlannedAsGeneratedGatherKernels) {
  ir::Graph g = make_graph({{"x", {2, 3, 8, 8}}, {"g", {2, 5, 6, 2}}},
                           {{"upsample_bicubic", {"x"}, R"({"size": [16, 16], "scale": 2.0})"},
                            {"grid_sample", {"x", "g"}, R"({"padding_mode": "border"})"}});
  for (const ir::Node& n : g.nodes()) {
    auto d = schedule::default_strategy(g, n);
    EXPECT_EQ(d.impl, schedule::Impl::kGenerated) << ir::op_info(n.op).name;
    EXPECT_EQ(d.strategy, schedule::Strategy::kGather) << ir::op_info(n.op).name;
  }
}

TEST(CodegenResample, BicubicSourceIndexAndWeights) {
  // 6 -> 13 rows, 6 -> 9 columns, half-pixel centres not clamped at 0 (cubic), floorf, torch's weights.
  std::string b = code_of("upsample_bicubic", {{"x", {2, 3, 6, 6}}}, R"({"size": [13, 9]})");
  EXPECT_TRUE(has(b, "const float ry = (0.461538464f) * ((float)oy + (float)0.5) - (float)0.5;")) << b;
  EXPECT_FALSE(has(b, "if (ry < ")) << b;
  EXPECT_TRUE(has(b, "const int sy = (int)floorf(ry);")) << b;
  EXPECT_TRUE(has(b, "const float ty = ry - (float)sy;")) << b;
  EXPECT_TRUE(has(b, "const float A = -0.75;")) << b;
  EXPECT_TRUE(has(b, "const float fax = (float)(tx + 1.0), fbx = (float)(1.0 - tx), fcx = (float)(fbx + 1.0);")) << b;
  EXPECT_TRUE(has(b, "((A * fax - 5 * A) * fax + 8 * A) * fax - 4 * A, ((A + 2) * tx - (A + 3)) * tx * tx + 1")) << b;
  EXPECT_TRUE(has(b, "col[j] = max(min(sx - 1 + j, 5), 0);")) << b;
  EXPECT_TRUE(has(b, "(int64_t)max(min(sy - 1 + k, 5), 0) * 6LL;")) << b;
  EXPECT_TRUE(has(b, "rows[k] = (float)in0[row + col[0]] * wx[0] + ")) << b;
  EXPECT_TRUE(has(b, "const float v = rows[0] * wy[0] + rows[1] * wy[1] + rows[2] * wy[2] + rows[3] * wy[3];")) << b;
  // scale_factor as torch passes it on (1 / 2.5), align_corners (n - 1) / (m - 1) in double for float64.
  std::string s = code_of("upsample_bicubic", {{"x", {1, 2, 4, 4}}}, R"({"size": [10, 10], "scale": 2.5})");
  EXPECT_TRUE(has(s, "(0.400000006f) * ((float)ox + (float)0.5)")) << s;
  std::string a =
      code_of("upsample_bicubic", {{"x", {1, 2, 6, 6}, "float64"}}, R"({"size": [11, 6], "align_corners": true})");
  EXPECT_TRUE(has(a, "const double ry = (0.5) * (double)oy;")) << a;
  EXPECT_TRUE(has(a, "const int sy = (int)floorf((float)ry);")) << a;  // torch's floorf, of a double too
  EXPECT_TRUE(has(a, "(align_corners)")) << a;
  std::string h = code_of("upsample_bicubic", {{"x", {1, 2, 5, 5}, "float16"}}, R"({"size": [7, 3]})");
  EXPECT_TRUE(has(h, "(float)(float)in0[row + col[0]]")) << h;
  EXPECT_TRUE(has(h, "out[i] = __float2half((float)(v));")) << h;
  // Equal sizes are a copy whatever the scale, as in torch.
  std::string c = code_of("upsample_bicubic", {{"x", {1, 2, 5, 5}}}, R"({"size": [5, 5], "scale": 1.05})");
  EXPECT_TRUE(has(c, "cudaMemcpyAsync")) << c;
}

TEST(CodegenResample, GridSampleCoordinates) {
  const std::vector<In> ins = {{"x", {2, 3, 8, 9}}, {"g", {2, 5, 6, 2}}};
  std::string z = code_of("grid_sample", ins);
  EXPECT_TRUE(has(z, "const int64_t g = (nc / 3LL * 30LL + p) * 2;")) << z;
  EXPECT_TRUE(has(z, "float sx = ((gx + 1.f) * 9 - 1) / 2;")) << z;
  EXPECT_TRUE(has(z, "float sy = ((gy + 1.f) * 8 - 1) / 2;")) << z;
  EXPECT_FALSE(has(z, "fminf")) << z;  // zeros: no clipping
  EXPECT_TRUE(has(z,
                  "if (sx > (float)2147483646 || sx < (float)(-2147483647 - 1) || !isfinite((double)sx)) sx = "
                  "(float)-100.0;"))
      << z;
  EXPECT_TRUE(has(z, "const int x0 = (int)floorf(sx), y0 = (int)floorf(sy), x1 = x0 + 1, y1 = y0 + 1;")) << z;
  EXPECT_TRUE(has(z, "nw = (x1 - sx) * (y1 - sy), ne = (sx - x0) * (y1 - sy), sw = (x1 - sx) * (sy - y0)")) << z;
  EXPECT_TRUE(has(z, "if (in_y1 && in_x0) v += (float)in0[base + (int64_t)y1 * 9LL + x0] * sw;")) << z;
  std::string b = code_of("grid_sample", ins, R"({"padding_mode": "border", "align_corners": true})");
  EXPECT_TRUE(has(b, "float sx = ((gx + 1.f) / 2) * 8;")) << b;
  EXPECT_TRUE(has(b, "sx = fminf((float)8, fmaxf(sx, (float)0));")) << b;
  EXPECT_TRUE(has(b, "sy = fminf((float)7, fmaxf(sy, (float)0));")) << b;
  // reflection between -0.5 and n - 0.5 (span n), or 0 and n - 1 with align_corners; then clipped
  std::string r = code_of("grid_sample", ins, R"({"padding_mode": "reflection"})");
  EXPECT_TRUE(has(r, "const float v = fabsf(sx - (-0.5f));")) << r;
  EXPECT_TRUE(has(r, "const float extra = fmodf(v, (9.0f));")) << r;
  EXPECT_TRUE(has(r, "const int flips = (int)floorf(v / (9.0f));")) << r;
  EXPECT_TRUE(has(r, "sx = flips % 2 == 0 ? extra + (-0.5f) : (9.0f) - extra + (-0.5f);")) << r;
  EXPECT_TRUE(has(r, "sx = fminf((float)8, fmaxf(sx, (float)0));")) << r;
  std::string rc = code_of("grid_sample", {{"x", {1, 1, 1, 4}}, {"g", {1, 2, 2, 2}}},
                           R"({"padding_mode": "reflection", "align_corners": true})");
  EXPECT_TRUE(has(rc, "sy = (float)0;")) << rc;  // one row: torch's reflect_coordinates gives 0
  EXPECT_TRUE(has(rc, "fmodf(v, (3.0f))")) << rc;
  // nearest: round half to even; outside the input zero
  std::string n = code_of("grid_sample", {{"x", {2, 3, 8, 9}, "float64"}, {"g", {2, 5, 6, 2}, "float64"}},
                          R"({"mode": "nearest"})");
  EXPECT_TRUE(has(n, "const int xn = (int)nearbyint(sx), yn = (int)nearbyint(sy);")) << n;
  EXPECT_TRUE(has(n,
                  "out[i] = yn >= 0 && yn < 8 && xn >= 0 && xn < 9 ? in0[base + (int64_t)yn * 9LL + xn] : "
                  "((double)0);"))
      << n;
  EXPECT_TRUE(has(n, "double sx = ((gx + 1.f) * 9 - 1) / 2;")) << n;
}

TEST(CodegenResampleBuild, BicubicAndGridSampleInEveryDtype) {
  std::vector<In> ins = {{"f", {2, 3, 6, 7}},
                         {"h", {1, 2, 5, 4}, "float16"},
                         {"b", {1, 2, 5, 4}, "bfloat16"},
                         {"d", {2, 2, 3, 3}, "float64"},
                         {"g", {2, 4, 5, 2}},
                         {"gh", {1, 3, 3, 2}, "float16"},
                         {"gb", {1, 3, 3, 2}, "bfloat16"},
                         {"gd", {2, 4, 5, 2}, "float64"}};
  std::vector<Op> ops = {
      {"upsample_bicubic", {"f"}, R"({"size": [12, 14], "scale": 2.0})"},
      {"upsample_bicubic", {"f"}, R"({"size": [13, 5], "align_corners": true})"},
      {"upsample_bicubic", {"f"}, R"({"size": [6, 7]})"},
      {"upsample_bicubic", {"h"}, R"({"size": [9, 9]})"},
      {"upsample_bicubic", {"b"}, R"({"size": [3, 2], "align_corners": true})"},
      {"upsample_bicubic", {"d"}, R"({"size": [7, 8]})"},
  };
  for (const char* mode : {"bilinear", "nearest"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (const char* corners : {"false", "true"}) {
        const std::string attrs = std::string(R"({"mode": ")") + mode + R"(", "padding_mode": ")" + padding +
                                  R"(", "align_corners": )" + corners + "}";
        ops.push_back({"grid_sample", {"f", "g"}, attrs});
        ops.push_back({"grid_sample", {"d", "gd"}, attrs});
      }
    }
  }
  ops.push_back({"grid_sample", {"h", "gh"}, R"({"padding_mode": "reflection"})"});
  ops.push_back({"grid_sample", {"b", "gb"}, R"({"mode": "nearest", "padding_mode": "border"})"});
  kforge::testing::expect_builds_with_nvcc(emit(make_graph(ins, ops)), "resample-bicubic-grid-sample-build");
}

}  // namespace
}  // namespace kforge::codegen
