// The graph IR: what the model computes (values, nodes, inputs, parameters), never how.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "ir/attrs.h"
#include "ir/dtype.h"
#include "ir/op_registry.h"

namespace kforge::ir {

using Shape = std::vector<int64_t>;

struct TensorType {
  Shape shape;
  DType dtype = DType::kFloat32;
  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  bool operator==(const TensorType& o) const { return shape == o.shape && dtype == o.dtype; }
};

std::string shape_str(const Shape& s);  // "[4, 8]"

enum class ValueKind { kInput, kParam, kNode };

using ValueIndex = int;
constexpr ValueIndex kNoValue = -1;

struct Value {
  std::string id;
  ValueKind kind = ValueKind::kNode;
  TensorType type;
  int owner = -1;  // index into inputs_, params_ or nodes_
};

struct GraphInput {
  ValueIndex value = kNoValue;
  std::string name;  // forward's argument name
  Json dist;         // how get_inputs() makes it: {"kind": "uniform", ...}
};

struct GraphParam {
  ValueIndex value = kNoValue;
  std::string path;  // "conv.weight"
  bool is_buffer = false;
  Json moments;  // {"mean", "std"} of the model's own initial values, measured at import; null when unknown
  // A complex parameter or buffer, held as its real view (the last dim of 2: real, imaginary): the model's
  // tensor is complex64 (complex128, complex32) of the shape without that dim, whose memory is this view.
  bool complex_view = false;
  // A tensor the model keeps as a plain attribute (self.mask = torch.tril(...), not a registered buffer):
  // is_buffer is set too; ModelNew registers it as a non-persistent buffer when it is built, so that
  // model.to(device) moves it as it moves buffers.
  bool attribute = false;
};

// One positional argument of forward: a graph input, or a Python number the graph was specialized to
// (`A * s` with s = 3.14 from get_inputs()). ModelNew checks that a constant is passed unchanged.
struct ForwardArg {
  std::string name;
  ValueIndex input = kNoValue;  // kNoValue for a constant
  Json constant;
};

struct Node {
  OpId op{};
  std::vector<ValueIndex> inputs;  // kNoValue for an absent optional input
  Attrs attrs;
  ValueIndex output = kNoValue;
  std::string loc;  // "problem.py:15"
};

class Graph {
 public:
  std::string name;
  std::string source;
  std::string torch_version;
  std::string mode = "eval";
  Json init_args = Json::array();
  // forward's arguments in order; every input appears once. add_input appends one; a graph JSON's
  // "forward_args" replaces the list (to place constants among the inputs).
  std::vector<ForwardArg> forward_args;

  const std::vector<Value>& values() const { return values_; }
  const std::vector<GraphInput>& inputs() const { return inputs_; }
  const std::vector<GraphParam>& params() const { return params_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueIndex>& outputs() const { return outputs_; }

  const Value& value(ValueIndex v) const;
  const TensorType& type(ValueIndex v) const { return value(v).type; }
  // The value called `id`, or kNoValue.
  ValueIndex find(const std::string& id) const;
  // The node producing v, or nullptr for inputs and params.
  const Node* producer(ValueIndex v) const;

  ValueIndex add_input(const std::string& id, const std::string& name, TensorType type, Json dist);
  ValueIndex add_param(const std::string& id, const std::string& path, bool is_buffer, TensorType type,
                       Json moments = Json(), bool complex_view = false, bool attribute = false);
  // Appends a node whose inputs are already in the graph; its output type is given.
  ValueIndex add_node(const std::string& id, Node node, TensorType type);
  void set_outputs(std::vector<ValueIndex> outs) { outputs_ = std::move(outs); }

  // Nodes that read value v, in node order (each once); kept as nodes are added.
  const std::vector<int>& users(ValueIndex v) const;

 private:
  ValueIndex add_value(Value value);

  std::vector<Value> values_;
  std::vector<std::vector<int>> users_;                // per value
  std::unordered_map<std::string, ValueIndex> by_id_;  // the first value of each id
  std::vector<GraphInput> inputs_;
  std::vector<GraphParam> params_;
  std::vector<Node> nodes_;
  std::vector<ValueIndex> outputs_;
};

// Parses graph JSON (docs/graph-format.md), fills defaults from the schema, checks every attr and
// input, re-infers every shape and rejects disagreement with the recorded one. `what` names the
// source in messages.
StatusOr<Graph> graph_from_json(const Json& j, const std::string& what);
StatusOr<Graph> load_graph(const std::string& path);
OrderedJson graph_to_json(const Graph& g);

// Shape and dtype of a node's output from its op, attrs and input types.
StatusOr<TensorType> infer_type(const Graph& g, const Node& node);

// Checks structure (ids, topological order, outputs) and re-infers every node's type.
Status validate(const Graph& g);

// A one-line description of a node for messages: "v3 = conv(x, p0, p1) at problem.py:15".
std::string describe(const Graph& g, const Node& node);

// A node whose every output element depends only on its operands at the same index, up to a
// per-channel broadcast: the elementwise families, and batch_norm with running statistics
// (training false: a per-channel affine map). Chains of them fuse into one kernel.
bool is_pointwise(const Node& node);

}  // namespace kforge::ir
