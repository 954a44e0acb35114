// The worker's sandbox as bubblewrap is told it: torch.compile's baseline cache is bound read-only into
// every worker that may run a candidate, writable only into a baselines worker; each worker compiles
// into its own scratch.
#include <gtest/gtest.h>

#include <algorithm>

#include "sandbox/isolation.h"

namespace kforge::sandbox {
namespace {

// The source of every bind of this kind ("--bind", "--ro-bind") in the argument list.
std::vector<std::string> binds(const std::vector<std::string>& a, const std::string& kind) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 2 < a.size(); ++i)
    if (a[i] == kind) out.push_back(a[i + 1]);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string env_value(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e.rfind(name + "=", 0) == 0) return e.substr(name.size() + 1);
  return "";
}

IsolationOptions options(bool writer) {
  IsolationOptions o;
  o.scratch = "/tmp/kforge-worker-test";
  o.baseline_cache = "/tmp/kforge-baselines-test";
  o.baselines_writer = writer;
  return o;
}

TEST(SandboxIsolation, TheBaselineCacheIsReadOnlyWhereCandidatesRun) {
  const auto a = bwrap_arguments("bwrap", options(false));
  EXPECT_EQ(binds(a, "--bind"), std::vector<std::string>{"/tmp/kforge-worker-test"});  // the scratch alone
  EXPECT_TRUE(has(binds(a, "--ro-bind"), "/tmp/kforge-baselines-test"));
  // The read-only bind comes after "/" and the scratch: nothing later makes it writable again.
  auto ro = std::find(a.begin(), a.end(), "/tmp/kforge-baselines-test");
  auto scratch = std::find(a.begin(), a.end(), "/tmp/kforge-worker-test");
  EXPECT_LT(scratch - a.begin(), ro - a.begin());
  EXPECT_EQ(a.back(), "--");
}

TEST(SandboxIsolation, OnlyABaselinesWorkerMayWriteTheBaselineCache) {
  const auto a = bwrap_arguments("bwrap", options(true));
  EXPECT_TRUE(has(binds(a, "--bind"), "/tmp/kforge-baselines-test"));
  EXPECT_FALSE(has(binds(a, "--ro-bind"), "/tmp/kforge-baselines-test"));
}

TEST(SandboxIsolation, NoCacheDirectoryIsSharedWritable) {
  IsolationOptions o = options(false);
  o.baseline_cache.clear();
  const auto a = bwrap_arguments("bwrap", o);
  EXPECT_EQ(binds(a, "--bind"), std::vector<std::string>{"/tmp/kforge-worker-test"});
}

TEST(SandboxIsolation, EachWorkerCompilesIntoItsOwnScratch) {
  const auto env = isolation_env(options(false));
  EXPECT_EQ(env_value(env, "TORCHINDUCTOR_CACHE_DIR").rfind("/tmp/kforge-worker-test/", 0), 0u);
  EXPECT_EQ(env_value(env, "TRITON_CACHE_DIR").rfind("/tmp/kforge-worker-test/", 0), 0u);
  EXPECT_EQ(env_value(env, "KFORGE_BASELINE_CACHE"), "/tmp/kforge-baselines-test");
  EXPECT_EQ(env_value(env, "KFORGE_HARNESS_ROLE"), "");

  const auto writer = isolation_env(options(true));
  EXPECT_EQ(env_value(writer, "TORCHINDUCTOR_CACHE_DIR"), "/tmp/kforge-baselines-test/inductor");
  EXPECT_EQ(env_value(writer, "TRITON_CACHE_DIR"), "/tmp/kforge-baselines-test/triton");
  EXPECT_EQ(env_value(writer, "KFORGE_HARNESS_ROLE"), "baselines");
}

TEST(SandboxIsolation, TheBaselineCacheIsOnePerRun) {
  const auto dir = baseline_cache_dir();
  EXPECT_EQ(dir, baseline_cache_dir());
  EXPECT_NE(dir.filename().string().find(std::to_string(::getpid())), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
}

}  // namespace
}  // namespace kforge::sandbox
