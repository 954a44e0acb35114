// Test helpers: one-node graph JSON.
#include "test_util.h"

#include <unistd.h>

#include "sandbox/build.h"
#include "sandbox/toolchain.h"

namespace kforge::testing {

void expect_builds_with_nvcc(const codegen::Program& p, const std::string& tag) {
  auto tc = sandbox::find_toolchain();
  if (!tc.is_ok()) GTEST_SKIP() << tc.status().message();
  auto dir = temp_dir(tag);
  auto r =
      sandbox::build_program(p, tc.value(), {.out_dir = dir, .library_name = "lib.so", .cache_dir = dir / "cache"});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->ok) << r->message;
  std::filesystem::remove_all(dir);
}

std::string one_node_graph(const std::string& op, const std::vector<std::pair<std::string, ir::Shape>>& inputs,
                           const std::string& attrs_json, const ir::Shape& out_shape, const std::string& out_dtype,
                           const std::vector<std::string>& input_dtypes) {
  Json g;
  g["format"] = "kforge.graph/1";
  g["name"] = "t_" + op;
  g["inputs"] = Json::array();
  Json ins = Json::array();
  for (const auto& [id, shape] : inputs) {
    const size_t k = ins.size();
    const std::string dtype = k < input_dtypes.size() ? input_dtypes[k] : "float32";
    g["inputs"].push_back({{"id", id}, {"name", id}, {"shape", shape}, {"dtype", dtype}});
    ins.push_back(id);
  }
  g["params"] = Json::array();
  g["nodes"] = Json::array({{{"id", "y"},
                             {"op", op},
                             {"inputs", ins},
                             {"attrs", Json::parse(attrs_json)},
                             {"shape", out_shape},
                             {"dtype", out_dtype}}});
  g["outputs"] = Json::array({"y"});
  return g.dump();
}

}  // namespace kforge::testing
