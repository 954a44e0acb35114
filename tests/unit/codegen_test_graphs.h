// Graphs for the codegen tests, built in code: inputs, one node per op (attrs defaulted from the
// schema, output types inferred), planned one kernel per op and emitted.
#pragma once

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "codegen/program.h"
#include "ir/op_registry.h"
#include "schedule/planner.h"
#include "test_util.h"

namespace kforge::codegen::testing {

struct In {
  std::string id;
  ir::Shape shape;
  std::string dtype = "float32";
};

struct Op {
  std::string op;
  std::vector<std::string> inputs;
  std::string attrs = "{}";
};

// A float attr: a number, or "inf", "-inf", "nan" as the graph JSON writes them.
inline double number(const Json& j) {
  if (!j.is_string()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  return s == "-inf" ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

inline ir::AttrValue attr_value(const ir::AttrSpec& spec, const Json& j) {
  if (j.is_null()) return std::monostate{};
  switch (spec.type) {
    case ir::AttrType::kInt: return j.get<int64_t>();
    case ir::AttrType::kFloat: return number(j);
    case ir::AttrType::kBool: return j.get<bool>();
    case ir::AttrType::kStr:
    case ir::AttrType::kDType: return j.get<std::string>();
    case ir::AttrType::kInts: return j.get<std::vector<int64_t>>();
    case ir::AttrType::kScalar:
      if (j.is_number_integer()) return j.get<int64_t>();
      return number(j);
  }
  return std::monostate{};
}

// A graph over `ins` with one node per Op (ids v0, v1, ...; inputs name graph inputs or earlier
// nodes), attrs defaulted from the schema and output types inferred. Outputs: `outs`, or every node.
inline ir::Graph make_graph(const std::vector<In>& ins, const std::vector<Op>& ops,
                            std::vector<std::string> outs = {}) {
  ir::Graph g;
  g.name = "t_layout";
  for (const auto& in : ins)
    g.add_input(in.id, in.id, {in.shape, *ir::dtype_from_name(in.dtype)}, Json{{"kind", "unknown"}});
  for (size_t k = 0; k < ops.size(); ++k) {
    auto id = ir::op_from_name(ops[k].op);
    EXPECT_TRUE(id.has_value()) << ops[k].op;
    ir::Node node;
    node.op = *id;
    for (const auto& i : ops[k].inputs) {
      node.inputs.push_back(g.find(i));
      EXPECT_NE(node.inputs.back(), ir::kNoValue) << i;
    }
    Json attrs = Json::parse(ops[k].attrs);
    for (const auto& spec : ir::op_info(*id).attrs) {
      if (attrs.contains(spec.name)) {
        node.attrs.set(spec.name, attr_value(spec, attrs[spec.name]));
      } else {
        EXPECT_TRUE(spec.has_default) << ops[k].op << " needs attr " << spec.name;
        node.attrs.set(spec.name, spec.default_value);
      }
    }
    auto t = ir::infer_type(g, node);
    EXPECT_TRUE(t.is_ok()) << ops[k].op << ": " << t.status().message();
    if (!t.is_ok()) return g;
    std::string vid = "v" + std::to_string(k);
    g.add_node(vid, std::move(node), t.value());
    if (ops.size() == 1 || outs.empty()) outs.push_back(vid);
  }
  std::vector<ir::ValueIndex> o;
  for (const auto& id : outs) o.push_back(g.find(id));
  g.set_outputs(o);
  return g;
}

inline Program emit(const ir::Graph& g) {
  auto s = schedule::plan_one_kernel_per_op(g);
  auto p = emit_program(g, s, {.library_file = "lib.so", .reference_source = "# reference\n"});
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  if (!p.is_ok()) return Program{};
  return std::move(p).value();
}

// The code of the only kernel of a one-op graph (one kernel per op).
inline std::string code_of(const std::string& op, const std::vector<In>& ins, const std::string& attrs = "{}") {
  std::vector<std::string> ids;
  for (const auto& i : ins) ids.push_back(i.id);
  Program p = emit(make_graph(ins, {{op, ids, attrs}}));
  EXPECT_EQ(p.kernels.size(), 1u);
  return p.kernels.empty() ? "" : p.kernels[0].code;
}

inline bool has(const std::string& code, const std::string& what) {
  return code.find(what) != std::string::npos;
}

}  // namespace kforge::codegen::testing
