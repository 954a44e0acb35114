// Graph JSON (docs/graph-format.md) to Graph and back, with messages that say where the JSON is wrong.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "base/files.h"
#include "ir/graph.h"
#include "ir/strided_view.h"

namespace kforge::ir {

namespace {

Status field_error(const std::string& where, const std::string& what) {
  return invalid_argument(where + ": " + what);
}

StatusOr<TensorType> parse_type(const Json& j, const std::string& where) {
  if (!j.contains("shape") || !j["shape"].is_array()) return field_error(where, "needs \"shape\", a list of ints");
  if (!j.contains("dtype") || !j["dtype"].is_string()) return field_error(where, "needs \"dtype\", a string");
  TensorType t;
  for (const auto& d : j["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      return field_error(where, "shape entries must be non-negative ints");
    t.shape.push_back(d.get<int64_t>());
  }
  auto dt = dtype_from_name(j["dtype"].get<std::string>());
  if (!dt) return field_error(where, "unknown dtype '" + j["dtype"].get<std::string>() + "'");
  t.dtype = *dt;
  return t;
}

StatusOr<std::string> parse_id(const Json& j, const std::string& where) {
  if (!j.is_object()) return field_error(where, "must be a JSON object");
  if (!j.contains("id") || !j["id"].is_string() || j["id"].get<std::string>().empty()) {
    return field_error(where, "needs a non-empty string \"id\"");
  }
  return j["id"].get<std::string>();
}

// JSON has no inf or nan: they travel as the strings "inf", "-inf" and "nan".
std::optional<double> non_finite(const Json& v) {
  if (!v.is_string()) return std::nullopt;
  const auto s = v.get<std::string>();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

// The message for a float or scalar attr that is neither a number nor one of those strings.
Status not_a_number(const Json& v, const std::string& here) {
  if (v.is_string()) {
    return invalid_argument(here + " must be a number or one of the strings \"inf\", \"-inf\", \"nan\", not \"" +
                            v.get<std::string>() + "\"");
  }
  return invalid_argument(here + " must be a number");
}

StatusOr<AttrValue> parse_attr(const Json& v, const AttrSpec& spec, const std::string& where) {
  const std::string here = where + ": attr '" + spec.name + "'";
  if (v.is_null()) {
    if (!spec.nullable) return invalid_argument(here + " may not be null");
    return AttrValue{std::monostate{}};
  }
  switch (spec.type) {
    case AttrType::kInt:
      if (v.is_boolean()) return AttrValue{static_cast<int64_t>(v.get<bool>())};
      if (!v.is_number_integer()) return invalid_argument(here + " must be an int");
      return AttrValue{v.get<int64_t>()};
    case AttrType::kFloat:
      if (auto nf = non_finite(v)) return AttrValue{*nf};
      if (!v.is_number()) return not_a_number(v, here);
      return AttrValue{v.get<double>()};
    case AttrType::kScalar:
      if (v.is_boolean()) return AttrValue{static_cast<int64_t>(v.get<bool>())};
      if (v.is_number_integer()) return AttrValue{v.get<int64_t>()};
      if (v.is_number()) return AttrValue{v.get<double>()};
      if (auto nf = non_finite(v)) return AttrValue{*nf};
      return not_a_number(v, here);
    case AttrType::kBool:
      if (!v.is_boolean()) return invalid_argument(here + " must be true or false");
      return AttrValue{v.get<bool>()};
    case AttrType::kStr:
      if (!v.is_string()) return invalid_argument(here + " must be a string");
      return AttrValue{v.get<std::string>()};
    case AttrType::kDType:
      if (!v.is_string() || !dtype_from_name(v.get<std::string>()))
        return invalid_argument(here + " must be a dtype name such as \"float32\"");
      return AttrValue{v.get<std::string>()};
    case AttrType::kInts: {
      if (!v.is_array()) return invalid_argument(here + " must be a list of ints");
      std::vector<int64_t> out;
      for (const auto& e : v) {
        if (!e.is_number_integer()) return invalid_argument(here + " must be a list of ints");
        out.push_back(e.get<int64_t>());
      }
      return AttrValue{out};
    }
  }
  return internal_error("unreachable attr type");
}

Json attr_to_json(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, double>) {
          if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
          if (std::isnan(x)) return "nan";
          return x;
        } else {
          return x;
        }
      },
      v);
}

Status parse_node(Graph& g, const Json& jn, size_t index) {
  const std::string where = "node #" + std::to_string(index);
  KF_ASSIGN_OR_RETURN(std::string id, parse_id(jn, where));
  const std::string here = where + " (" + id + ")";
  if (g.find(id) != kNoValue) return field_error(here, "reuses the id '" + id + "'");
  if (!jn.contains("op") || !jn["op"].is_string()) return field_error(here, "needs \"op\", a string");
  const std::string op_name = jn["op"].get<std::string>();
  auto op = op_from_name(op_name);
  if (!op) return unsupported(here + ": unknown op '" + op_name + "' (not in src/ir/ops.def)");
  const OpInfo& info = op_info(*op);
  Node node;
  node.op = *op;
  if (jn.contains("loc") && jn["loc"].is_string()) node.loc = jn["loc"].get<std::string>();
  const std::string op_where = here + ", op '" + op_name + "'" + (node.loc.empty() ? "" : " at " + node.loc);

  Json ins = jn.value("inputs", Json::array());
  if (!ins.is_array()) return field_error(op_where, "\"inputs\" must be a list of value ids");
  if (ins.size() < info.min_inputs() || (!info.variadic() && ins.size() > info.inputs.size())) {
    return field_error(op_where,
                       "takes " + std::to_string(info.inputs.size()) + " inputs, got " + std::to_string(ins.size()));
  }
  for (size_t i = 0; i < ins.size(); ++i) {
    size_t spec_i = std::min(i, info.inputs.size() - 1);
    if (ins[i].is_null()) {
      if (!info.inputs[spec_i].optional)
        return field_error(op_where, "input '" + info.inputs[spec_i].name + "' is required");
      node.inputs.push_back(kNoValue);
      continue;
    }
    if (!ins[i].is_string()) return field_error(op_where, "inputs must be value ids (strings) or null");
    ValueIndex v = g.find(ins[i].get<std::string>());
    if (v == kNoValue)
      return field_error(op_where, "uses '" + ins[i].get<std::string>() + "', which is not defined before it");
    node.inputs.push_back(v);
  }
  while (!info.variadic() && node.inputs.size() < info.inputs.size()) node.inputs.push_back(kNoValue);

  Json attrs = jn.value("attrs", Json::object());
  if (!attrs.is_object()) return field_error(op_where, "\"attrs\" must be an object");
  for (const auto& [name, _] : attrs.items()) {
    if (!info.attr(name)) return field_error(op_where, "has no attr '" + name + "'");
  }
  for (const auto& spec : info.attrs) {
    if (attrs.contains(spec.name)) {
      KF_ASSIGN_OR_RETURN(AttrValue v, parse_attr(attrs[spec.name], spec, op_where));
      node.attrs.set(spec.name, std::move(v));
    } else if (spec.has_default) {
      node.attrs.set(spec.name, spec.default_value);
    } else {
      return field_error(op_where, "needs attr '" + spec.name + "'");
    }
  }
  KF_ASSIGN_OR_RETURN(TensorType recorded, parse_type(jn, op_where));
  g.add_node(id, std::move(node), std::move(recorded));
  return Status::ok();
}

Status parse_forward_args(Graph& g, const Json& j, const std::string& what) {
  if (j.is_null()) return Status::ok();  // forward takes exactly the inputs, as add_input recorded
  g.forward_args.clear();
  if (!j.is_array()) return invalid_argument(what + ": \"forward_args\" must be a list");
  std::vector<int> uses(g.values().size(), 0);
  for (const auto& ja : j) {
    const std::string where = what + ": forward argument #" + std::to_string(g.forward_args.size());
    if (!ja.is_object()) return invalid_argument(where + " must be an object");
    ForwardArg a;
    a.name = ja.value("name", "");
    if (ja.contains("input")) {
      a.input = ja["input"].is_string() ? g.find(ja["input"].get<std::string>()) : kNoValue;
      if (a.input == kNoValue || g.value(a.input).kind != ValueKind::kInput)
        return invalid_argument(where + ": \"input\" must name one of the graph's inputs");
      ++uses[static_cast<size_t>(a.input)];
    } else if (ja.contains("constant") && (ja["constant"].is_number() || ja["constant"].is_boolean())) {
      a.constant = ja["constant"];
    } else {
      return invalid_argument(where + " needs \"input\" (an input id) or \"constant\" (a number)");
    }
    g.forward_args.push_back(std::move(a));
  }
  for (const auto& in : g.inputs()) {
    if (uses[static_cast<size_t>(in.value)] != 1)
      return invalid_argument(what + ": input '" + g.value(in.value).id +
                              "' must appear exactly once in \"forward_args\"");
  }
  return Status::ok();
}

}  // namespace

namespace {

StatusOr<Graph> graph_from_json_fields(const Json& j, const std::string& what) {
  if (!j.is_object()) return invalid_argument(what + ": a graph must be a JSON object");
  if (j.value("format", "") != "kforge.graph/1") {
    return invalid_argument(
        what +
        ": not a kforge graph (expected \"format\": \"kforge.graph/1\"; make one with `kforge import PROBLEM.py`)");
  }
  Graph g;
  g.name = j.value("name", "model");
  g.source = j.value("source", "");
  g.torch_version = j.value("torch_version", "");
  g.mode = j.value("mode", "eval");
  if (g.mode != "eval" && g.mode != "train") return invalid_argument(what + ": \"mode\" must be \"eval\" or \"train\"");
  g.init_args = j.value("init_args", Json::array());

  for (const char* section : {"inputs", "params", "nodes", "outputs"}) {
    if (j.contains(section) && !j[section].is_array())
      return invalid_argument(what + ": \"" + std::string(section) + "\" must be a list");
  }
  size_t i = 0;
  for (const auto& ji : j.value("inputs", Json::array())) {
    const std::string where = what + ": input #" + std::to_string(i++);
    KF_ASSIGN_OR_RETURN(std::string id, parse_id(ji, where));
    if (g.find(id) != kNoValue) return invalid_argument(where + " reuses the id '" + id + "'");
    KF_ASSIGN_OR_RETURN(TensorType t, parse_type(ji, where));
    g.add_input(id, ji.value("name", id), std::move(t), ji.value("dist", Json{{"kind", "unknown"}}));
  }
  i = 0;
  for (const auto& jp : j.value("params", Json::array())) {
    const std::string where = what + ": param #" + std::to_string(i++);
    KF_ASSIGN_OR_RETURN(std::string id, parse_id(jp, where));
    if (g.find(id) != kNoValue) return invalid_argument(where + " reuses the id '" + id + "'");
    KF_ASSIGN_OR_RETURN(TensorType t, parse_type(jp, where));
    std::string kind = jp.value("kind", "parameter");
    if (kind != "parameter" && kind != "buffer" && kind != "attribute")
      return invalid_argument(where + ": kind must be \"parameter\", \"buffer\" or \"attribute\"");
    Json moments = jp.value("moments", Json());
    if (!moments.is_null() &&
        !(moments.is_object() && moments.value("mean", Json()).is_number() && moments.value("std", Json()).is_number()))
      return invalid_argument(where + ": moments must be {\"mean\": number, \"std\": number}");
    const bool complex_view = jp.value("complex", false);
    if (complex_view &&
        (t.shape.empty() || t.shape.back() != 2 || !is_floating(t.dtype) || t.dtype == DType::kBFloat16))
      return invalid_argument(where +
                              ": a complex param is its real view: float32, float64 or float16 with a last "
                              "dim of 2");
    g.add_param(id, jp.value("path", id), kind == "buffer", std::move(t), std::move(moments), complex_view,
                kind == "attribute");
  }
  i = 0;
  for (const auto& jn : j.value("nodes", Json::array())) {
    KF_RETURN_IF_ERROR(parse_node(g, jn, i++).with_context(what));
  }
  std::vector<ValueIndex> outs;
  for (const auto& jo : j.value("outputs", Json::array())) {
    if (!jo.is_string()) return invalid_argument(what + ": outputs must be value ids");
    ValueIndex v = g.find(jo.get<std::string>());
    if (v == kNoValue)
      return invalid_argument(what + ": output '" + jo.get<std::string>() + "' is not a defined value");
    outs.push_back(v);
  }
  g.set_outputs(std::move(outs));
  KF_RETURN_IF_ERROR(parse_forward_args(g, j.value("forward_args", Json()), what));
  KF_RETURN_IF_ERROR(validate(g).with_context(what));
  return g;
}

}  // namespace

namespace {

// A view node (ir/strided_view.h) whose result several generated readers (pointwise ops, reductions, or views
// that are read so in turn) take gets one copy per reader, placed just before it: each reader can then read the view in
// place (the fuse_elementwise and prologue skills), where one shared view must be gathered into a tensor first. A view
// costs no arithmetic, so a copy per reader recomputes nothing; unfused, each copy is its own gather. `j` is the
// graph's JSON as parsed into `g`; the answer is that JSON with the copies, or null for none.
Json with_view_per_reader(const Graph& g, const Json& j) {
  const auto& nodes = g.nodes();
  // Views whose every reader can read them in place: pointwise ops, reductions, and such views (a slice
  // before an unfold); found from the last node back, as readers come after what they read.
  // A pointwise reader takes only a view it reads coalesced (fuse_elementwise's rule): a transpose read by two
  // elementwise ops stays one tiled copy, not two.
  auto is_view = [&](const Node& n) { return !is_pointwise(n) && is_view_op(n.op); };
  std::vector<bool> folds(nodes.size(), false);
  for (size_t n = nodes.size(); n-- > 0;) {
    if (!is_view(nodes[n])) continue;
    if (std::find(g.outputs().begin(), g.outputs().end(), nodes[n].output) != g.outputs().end()) continue;
    auto view = view_chain(g, nodes[n], is_view);
    if (!view) continue;
    const bool coalesced = walks_innermost_contiguously(*view);
    const auto& users = g.users(nodes[n].output);
    folds[n] = !users.empty() && std::all_of(users.begin(), users.end(), [&](int u) {
      const Node& r = nodes[static_cast<size_t>(u)];
      return (is_pointwise(r) && coalesced) || op_info(r.op).family == OpFamily::kReduce ||
             folds[static_cast<size_t>(u)];
    });
  }
  std::vector<std::vector<Json>> before(nodes.size());                    // the copies to place before each node
  std::vector<std::map<std::string, std::string>> renamed(nodes.size());  // per reader: view id -> its copy's id
  bool any = false;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    const auto& users = g.users(node.output);
    if (!folds[n] || users.size() < 2) continue;
    const std::string& id = g.value(node.output).id;
    for (size_t k = 1; k < users.size(); ++k) {
      std::string copy_id = id + "_read" + std::to_string(k);
      while (g.find(copy_id) != kNoValue) copy_id += "_";
      Json copy = j.at("nodes").at(n);
      copy["id"] = copy_id;
      before[static_cast<size_t>(users[k])].push_back(std::move(copy));
      renamed[static_cast<size_t>(users[k])][id] = copy_id;
      any = true;
    }
  }
  if (!any) return Json();
  Json out = j;
  out["nodes"] = Json::array();
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (auto& copy : before[n]) out["nodes"].push_back(std::move(copy));
    Json reader = j.at("nodes").at(n);
    for (auto& in : reader["inputs"]) {
      if (!in.is_string()) continue;
      auto it = renamed[n].find(in.get<std::string>());
      if (it != renamed[n].end()) in = it->second;
    }
    out["nodes"].push_back(std::move(reader));
  }
  return out;
}

}  // namespace

StatusOr<Graph> graph_from_json(const Json& j, const std::string& what) {
  // The JSON library throws when a field has another type than asked for; here that is the user's
  // error, said as one, never an exception out of the IR.
  try {
    KF_ASSIGN_OR_RETURN(Graph g, graph_from_json_fields(j, what));
    // Each round copies the last shared view of a chain (an unfold of a slice: the unfolds, then the slice).
    Json current = j;
    for (Json unshared = with_view_per_reader(g, current); !unshared.is_null();
         unshared = with_view_per_reader(g, current)) {
      current = std::move(unshared);
      KF_ASSIGN_OR_RETURN(g, graph_from_json_fields(current, what));
    }
    return g;
  } catch (const Json::exception& e) {
    return invalid_argument(what + ": a field has the wrong type or value (" + std::string(e.what()) + ")");
  }
}

StatusOr<Graph> load_graph(const std::string& path) {
  KF_ASSIGN_OR_RETURN(std::string text, read_file(path));
  KF_ASSIGN_OR_RETURN(Json j, parse_json(text, path));
  return graph_from_json(j, path);
}

OrderedJson graph_to_json(const Graph& g) {
  OrderedJson j;
  j["format"] = "kforge.graph/1";
  j["name"] = g.name;
  j["source"] = g.source;
  j["torch_version"] = g.torch_version;
  j["mode"] = g.mode;
  j["init_args"] = g.init_args;
  auto type_fields = [](OrderedJson& o, const TensorType& t) {
    o["shape"] = t.shape;
    o["dtype"] = std::string(dtype_name(t.dtype));
  };
  j["inputs"] = OrderedJson::array();
  for (const auto& in : g.inputs()) {
    OrderedJson o;
    o["id"] = g.value(in.value).id;
    o["name"] = in.name;
    type_fields(o, g.type(in.value));
    o["dist"] = in.dist;
    j["inputs"].push_back(o);
  }
  j["forward_args"] = OrderedJson::array();
  for (const auto& a : g.forward_args) {
    OrderedJson o;
    o["name"] = a.name;
    if (a.input != kNoValue) {
      o["input"] = g.value(a.input).id;
    } else {
      o["constant"] = a.constant;
    }
    j["forward_args"].push_back(o);
  }
  j["params"] = OrderedJson::array();
  for (const auto& p : g.params()) {
    OrderedJson o;
    o["id"] = g.value(p.value).id;
    o["path"] = p.path;
    o["kind"] = p.attribute ? "attribute" : p.is_buffer ? "buffer" : "parameter";
    type_fields(o, g.type(p.value));
    if (!p.moments.is_null()) o["moments"] = p.moments;
    if (p.complex_view) o["complex"] = true;
    j["params"].push_back(o);
  }
  j["nodes"] = OrderedJson::array();
  for (const auto& n : g.nodes()) {
    OrderedJson o;
    o["id"] = g.value(n.output).id;
    o["op"] = op_info(n.op).name;
    OrderedJson ins = OrderedJson::array();
    for (auto in : n.inputs) ins.push_back(in == kNoValue ? OrderedJson(nullptr) : OrderedJson(g.value(in).id));
    o["inputs"] = ins;
    OrderedJson attrs = OrderedJson::object();
    for (const auto& [k, v] : n.attrs.all()) attrs[k] = attr_to_json(v);
    o["attrs"] = attrs;
    type_fields(o, g.type(n.output));
    if (!n.loc.empty()) o["loc"] = n.loc;
    j["nodes"].push_back(o);
  }
  j["outputs"] = OrderedJson::array();
  for (auto o : g.outputs()) j["outputs"].push_back(g.value(o).id);
  return j;
}

}  // namespace kforge::ir
