// Graph construction, lookup and validation.
#include "ir/graph.h"

#include <sstream>

namespace kforge::ir {

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

const Value& Graph::value(ValueIndex v) const {
  KF_CHECK(v >= 0 && static_cast<size_t>(v) < values_.size()) << "value index " << v << " out of range";
  return values_[static_cast<size_t>(v)];
}

ValueIndex Graph::find(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? kNoValue : it->second;
}

ValueIndex Graph::add_value(Value value) {
  auto v = static_cast<ValueIndex>(values_.size());
  by_id_.emplace(value.id, v);
  values_.push_back(std::move(value));
  users_.emplace_back();
  return v;
}

const Node* Graph::producer(ValueIndex v) const {
  const Value& val = value(v);
  if (val.kind != ValueKind::kNode) return nullptr;
  return &nodes_[static_cast<size_t>(val.owner)];
}

ValueIndex Graph::add_input(const std::string& id, const std::string& name, TensorType type, Json dist) {
  const ValueIndex v = add_value({id, ValueKind::kInput, std::move(type), static_cast<int>(inputs_.size())});
  inputs_.push_back({v, name, std::move(dist)});
  forward_args.push_back({name, v, Json()});
  return v;
}

ValueIndex Graph::add_param(const std::string& id, const std::string& path, bool is_buffer, TensorType type,
                            Json moments, bool complex_view, bool attribute) {
  const ValueIndex v = add_value({id, ValueKind::kParam, std::move(type), static_cast<int>(params_.size())});
  params_.push_back({v, path, is_buffer || attribute, std::move(moments), complex_view, attribute});
  return v;
}

ValueIndex Graph::add_node(const std::string& id, Node node, TensorType type) {
  const int index = static_cast<int>(nodes_.size());
  for (ValueIndex in : node.inputs) {
    if (in < 0 || static_cast<size_t>(in) >= users_.size()) continue;  // absent optional input
    auto& readers = users_[static_cast<size_t>(in)];
    if (readers.empty() || readers.back() != index) readers.push_back(index);
  }
  const ValueIndex v = add_value({id, ValueKind::kNode, std::move(type), index});
  node.output = v;
  nodes_.push_back(std::move(node));
  return v;
}

const std::vector<int>& Graph::users(ValueIndex v) const {
  value(v);  // checks the index
  return users_[static_cast<size_t>(v)];
}

std::string describe(const Graph& g, const Node& node) {
  std::ostringstream os;
  os << g.value(node.output).id << " = " << op_info(node.op).name << "(";
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    os << (i ? ", " : "") << (node.inputs[i] == kNoValue ? "None" : g.value(node.inputs[i]).id);
  }
  os << ")";
  if (!node.loc.empty()) os << " at " << node.loc;
  return os.str();
}

Status validate(const Graph& g) {
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const Node& node = g.nodes()[n];
    for (auto in : node.inputs) {
      if (in == kNoValue) continue;
      if (in >= node.output) {
        return invalid_argument("node " + describe(g, node) +
                                " uses a value defined after it (nodes must be in topological order)");
      }
    }
    auto inferred = infer_type(g, node);
    if (!inferred.is_ok()) return inferred.status().with_context("node " + describe(g, node));
    const TensorType& recorded = g.type(node.output);
    if (!(inferred.value() == recorded)) {
      return invalid_argument(
          "node " + describe(g, node) + ": torch recorded " + std::string(dtype_name(recorded.dtype)) +
          shape_str(recorded.shape) + " but kforge infers " + std::string(dtype_name(inferred->dtype)) +
          shape_str(inferred->shape) + " (a bug in kforge's shape rule for '" + op_info(node.op).name + "')");
    }
  }
  if (g.outputs().empty()) return invalid_argument("the graph has no outputs (forward must return a tensor)");
  return Status::ok();
}

bool is_pointwise(const Node& node) {
  if (is_elementwise(op_info(node.op).family)) return true;
  return node.op == OpId::kBatchNorm && node.attrs.has("training") && !node.attrs.b("training");
}

}  // namespace kforge::ir
