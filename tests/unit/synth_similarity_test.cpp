// The contamination check's measure: Dice of fingerprints, and, through the Python worker's AST
// normalization, near-copies of shared KernelBench problems (renamed variables, reordered
// constants and keywords, other docstrings and sizes) score above 0.9 while different tasks do not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "synth/similarity.h"
#include "synth/worker.h"
#include "test_util.h"

namespace kforge::synth {
namespace {

namespace fs = std::filesystem;

TEST(SynthSimilarity, DiceOfMultisets) {
  EXPECT_DOUBLE_EQ(dice_similarity({1, 2, 3}, {1, 2, 3}), 1.0);
  EXPECT_DOUBLE_EQ(dice_similarity({1, 2}, {3, 4}), 0.0);
  EXPECT_DOUBLE_EQ(dice_similarity({1, 1, 2}, {1, 2, 2}), 2.0 * 2 / 6);
  auto fp = fingerprint_from_json(Json::array({"b", "a", "a"}));
  ASSERT_TRUE(fp.is_ok());
  EXPECT_TRUE(std::is_sorted(fp->begin(), fp->end()));
  EXPECT_FALSE(fingerprint_from_json(Json::array({1, 2})).is_ok());
}

TEST(SynthSimilarity, NearestPrefersTheFirstOfEqualScores) {
  std::vector<BenchmarkProblem> problems = {{"a.py", {1, 2}}, {"b.py", {1, 2}}, {"c.py", {9}}};
  Nearest n = nearest_problem({1, 2}, problems);
  EXPECT_EQ(n.name, "a.py");
  EXPECT_DOUBLE_EQ(n.similarity, 1.0);
  EXPECT_TRUE(nearest_problem({1}, {}).name.empty());
}

// A near-copy of level2/1_Conv2D_ReLU_BiasAdd.py: every name changed, constants reordered and
// resized, keywords and docstring rewritten, annotations added, `x = ...; return x` form.
const char* kConvReluBiasCopy = R"py(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, c_in, c_out, k, shape_of_bias):
        super(Model, self).__init__()
        self.layer = nn.Conv2d(c_in, c_out, k)
        self.offset = nn.Parameter(torch.randn(shape_of_bias))

    def forward(self, inp: torch.Tensor) -> torch.Tensor:
        h = self.layer(inp)
        h = torch.relu(h)
        h = h + self.offset
        return h

k = 5
shape_of_bias = (32, 1, 1)
c_out = 32
c_in = 8
n = 64
hh, ww = 128, 128

def get_inputs():
    return [torch.rand(n, c_in, hh, ww)]

def get_init_inputs():
    return [c_in, c_out, k, shape_of_bias]
)py";

// A near-copy of level1/19_ReLU.py.
const char* kReluCopy = R"py(import torch
import torch.nn as nn

class Model(nn.Module):
    """Applies ReLU."""
    def __init__(self):
        super().__init__()

    def forward(self, t):
        out = torch.relu(t)
        return out

rows = 16
cols = 1024

def get_inputs():
    return [torch.rand(rows, cols)]

def get_init_inputs():
    return []
)py";

// A different task (what kforge synth writes): a transposed 3D convolution, then a layer norm.
const char* kDifferent = R"py(import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d -> LayerNorm (composed by kforge synth)"""

    def __init__(self, in_channels, out_channels, kernel_size, normalized_shape):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=2)
        self.layer_norm = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.layer_norm(x)
        return x


batch_size = 16
in_channels = 8
depth = 16
height = 32
width = 32
out_channels = 16
kernel_size = 3
normalized_shape = (65,)


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, normalized_shape]
)py";

class SynthSimilarityWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    shared_ = fs::path(KFORGE_SOURCE_DIR) / ".." / "shared" / "kernelbench";
    if (!fs::exists(shared_ / "level2" / "1_Conv2D_ReLU_BiasAdd.py")) GTEST_SKIP() << "shared KernelBench not present";
    dir_ = kforge::testing::temp_dir("synth-similarity");
    auto hello = worker_.request({{"cmd", "hello"}}, 120);
    if (!hello.is_ok()) GTEST_SKIP() << "no python3 with torch for the synth worker: " << hello.status().message();
  }
  Fingerprint of(const fs::path& path) {
    auto answer = worker_.request({{"cmd", "features"}, {"paths", {path.string()}}}, 120);
    if (!answer.is_ok()) {
      ADD_FAILURE() << answer.status().message();
      return {};
    }
    EXPECT_TRUE((*answer)["errors"][0].is_null()) << (*answer)["errors"][0].dump();
    auto fp = fingerprint_from_json((*answer)["features"][0]);
    EXPECT_TRUE(fp.is_ok());
    return fp.is_ok() ? fp.value() : Fingerprint{};
  }
  Fingerprint of_text(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return of(dir_ / name);
  }
  std::vector<BenchmarkProblem> benchmarks() {
    std::vector<BenchmarkProblem> out;
    for (const char* level : {"level1", "level2"}) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(shared_ / level)) {
        if (e.path().extension() == ".py") files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) out.push_back({std::string(level) + "/" + f.filename().string(), of(f)});
    }
    return out;
  }
  fs::path shared_;
  fs::path dir_;
  SynthWorker worker_;
};

TEST_F(SynthSimilarityWorker, PlantedNearCopiesAreAboveTheThreshold) {
  auto problems = benchmarks();
  ASSERT_EQ(problems.size(), 150u);
  Nearest a = nearest_problem(of_text("copy_a.py", kConvReluBiasCopy), problems);
  EXPECT_EQ(a.name, "level2/1_Conv2D_ReLU_BiasAdd.py");
  EXPECT_GT(a.similarity, kContaminationThreshold);
  Nearest b = nearest_problem(of_text("copy_b.py", kReluCopy), problems);
  EXPECT_EQ(b.name, "level1/19_ReLU.py");
  EXPECT_GT(b.similarity, kContaminationThreshold);
}

TEST_F(SynthSimilarityWorker, DifferentTasksStayBelowTheThreshold) {
  auto problems = benchmarks();
  Nearest n = nearest_problem(of_text("different.py", kDifferent), problems);
  EXPECT_LE(n.similarity, kContaminationThreshold) << n.name;
  // A problem compared with the others of the suite: distinct KernelBench problems mostly differ.
  Fingerprint relu = of(shared_ / "level1" / "19_ReLU.py");
  Fingerprint conv = of(shared_ / "level2" / "1_Conv2D_ReLU_BiasAdd.py");
  EXPECT_LT(dice_similarity(relu, conv), 0.9);
}

}  // namespace
}  // namespace kforge::synth
