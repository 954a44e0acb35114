// The importer as C++ sees it (src/sandbox/python.cpp): the import servers give the one-shot importer's
// graphs and messages, and the importer's fingerprint follows its sources.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "base/files.h"
#include "sandbox/python.h"

namespace kforge::sandbox {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kforge-python-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

constexpr const char* kRelu = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.rand(4, 8)]

def get_init_inputs():
    return []
)";

TEST(ImporterFingerprint, FollowsTheImportersSourcesAndOpsDefOnly) {
  fs::path home = scratch("fingerprint");
  fs::create_directories(home / "python/kforge");
  fs::create_directories(home / "src/ir");
  ASSERT_TRUE(write_file(home / "python/kforge/importer.py", "A = 1\n").is_ok());
  ASSERT_TRUE(write_file(home / "src/ir/ops.def", "KF_OP(x)\n").is_ok());
  auto first = importer_fingerprint_of(home);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  ASSERT_TRUE(write_file(home / "python/kforge/notes.txt", "not code\n").is_ok());
  EXPECT_EQ(importer_fingerprint_of(home).value(), first.value());
  ASSERT_TRUE(write_file(home / "python/kforge/importer.py", "A = 2\n").is_ok());
  auto changed = importer_fingerprint_of(home);
  EXPECT_NE(changed.value(), first.value());
  ASSERT_TRUE(write_file(home / "src/ir/ops.def", "KF_OP(y)\n").is_ok());
  EXPECT_NE(importer_fingerprint_of(home).value(), changed.value());
  fs::remove_all(home);
}

TEST(ImportServers, GiveTheOneShotImportersGraphsAndMessages) {
  fs::path dir = scratch("server");
  ASSERT_TRUE(write_file(dir / "relu.py", kRelu).is_ok());
  ASSERT_TRUE(write_file(dir / "bad.py", "import torch\nx = 1\n").is_ok());
  ::unsetenv("KFORGE_IMPORT_SERVER");
  auto served = run_importer((dir / "relu.py").string(), {});
  ASSERT_TRUE(served.is_ok()) << served.status().message();
  auto served_again = run_importer((dir / "relu.py").string(), {});  // the kept server, a second child
  ASSERT_TRUE(served_again.is_ok()) << served_again.status().message();
  auto bad_served = run_importer((dir / "bad.py").string(), {});
  ::setenv("KFORGE_IMPORT_SERVER", "0", 1);
  auto one_shot = run_importer((dir / "relu.py").string(), {});
  auto bad_one_shot = run_importer((dir / "bad.py").string(), {});
  ::unsetenv("KFORGE_IMPORT_SERVER");
  ASSERT_TRUE(one_shot.is_ok()) << one_shot.status().message();
  EXPECT_EQ(served.value(), one_shot.value());
  EXPECT_EQ(served_again.value(), one_shot.value());
  ASSERT_FALSE(bad_served.is_ok());
  ASSERT_FALSE(bad_one_shot.is_ok());
  EXPECT_EQ(bad_served.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad_served.status().message(), bad_one_shot.status().message());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kforge::sandbox
