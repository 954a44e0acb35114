// Builds the OpInfo table from ops.def; the schema strings are parsed once, at first use.
#include "ir/op_registry.h"

#include <cstdlib>
#include <sstream>

#include "base/check.h"
#include "ir/dtype.h"

namespace kforge::ir {

namespace {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == sep && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

AttrType parse_attr_type(const std::string& t, const std::string& op) {
  if (t == "int") return AttrType::kInt;
  if (t == "float") return AttrType::kFloat;
  if (t == "bool") return AttrType::kBool;
  if (t == "str") return AttrType::kStr;
  if (t == "ints") return AttrType::kInts;
  if (t == "dtype") return AttrType::kDType;
  if (t == "scalar") return AttrType::kScalar;
  KF_CHECK(false) << "ops.def: op " << op << " has an attr of unknown type '" << t << "'";
  return AttrType::kInt;
}

AttrValue parse_default(const std::string& text, AttrType type, const std::string& op) {
  if (text == "null") return std::monostate{};
  switch (type) {
    case AttrType::kBool:
      KF_CHECK(text == "true" || text == "false") << "ops.def: bad bool default in " << op;
      return text == "true";
    case AttrType::kInt: return static_cast<int64_t>(std::strtoll(text.c_str(), nullptr, 10));
    case AttrType::kFloat:
    case AttrType::kScalar: return std::strtod(text.c_str(), nullptr);
    case AttrType::kStr:
    case AttrType::kDType: return text;
    case AttrType::kInts: {
      KF_CHECK(text.size() >= 2 && text.front() == '[' && text.back() == ']') << "ops.def: bad list in " << op;
      std::vector<int64_t> v;
      for (const auto& part : split(text.substr(1, text.size() - 2), ','))
        v.push_back(std::strtoll(part.c_str(), nullptr, 10));
      return v;
    }
  }
  return std::monostate{};
}

OpInfo make_info(OpId id, const char* name, OpFamily family, const char* inputs, const char* attrs) {
  OpInfo info{id, name, family, {}, {}};
  for (auto in : split(inputs, ',')) {
    InputSpec spec;
    if (!in.empty() && in.back() == '?') {
      spec.optional = true;
      in.pop_back();
    } else if (!in.empty() && in.back() == '*') {
      spec.variadic = true;
      in.pop_back();
    }
    spec.name = in;
    info.inputs.push_back(spec);
  }
  for (const auto& a : split(attrs, ',')) {
    AttrSpec spec;
    auto colon = a.find(':');
    KF_CHECK(colon != std::string::npos) << "ops.def: attr '" << a << "' of " << name << " has no type";
    spec.name = a.substr(0, colon);
    std::string type = a.substr(colon + 1);
    std::string def;
    if (auto eq = type.find('='); eq != std::string::npos) {
      def = type.substr(eq + 1);
      type = type.substr(0, eq);
      spec.has_default = true;
    }
    if (!type.empty() && type.back() == '?') {
      spec.nullable = true;
      type.pop_back();
    }
    spec.type = parse_attr_type(type, name);
    if (spec.has_default) spec.default_value = parse_default(def, spec.type, name);
    info.attrs.push_back(spec);
  }
  return info;
}

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> table;
#define KF_OP(id, name, family, inputs, attrs) \
  table.push_back(make_info(OpId::k##id, name, OpFamily::family, inputs, attrs));
#include "ir/ops.def"
#undef KF_OP
  return table;
}

}  // namespace

const AttrSpec* OpInfo::attr(std::string_view attr_name) const {
  for (const auto& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

size_t OpInfo::min_inputs() const {
  size_t n = 0;
  for (const auto& in : inputs) {
    if (!in.optional && !in.variadic) ++n;
  }
  return n;
}

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> table = build_table();
  return table;
}

const OpInfo& op_info(OpId id) {
  return all_ops()[static_cast<size_t>(id)];
}

std::optional<OpId> op_from_name(std::string_view name) {
  for (const auto& info : all_ops()) {
    if (info.name == name) return info.id;
  }
  return std::nullopt;
}

std::string_view family_name(OpFamily f) {
  switch (f) {
#define KF_FAMILY(name)   \
  case OpFamily::k##name: \
    return #name;
#include "ir/op_families.def"
#undef KF_FAMILY
  }
  return "?";
}

bool is_elementwise(OpFamily f) {
  switch (f) {
    case OpFamily::kUnary:
    case OpFamily::kBinary:
    case OpFamily::kCompare:
    case OpFamily::kWhere:
    case OpFamily::kCast:
    case OpFamily::kLogical:
    case OpFamily::kFull: return true;
    default: return false;
  }
}

}  // namespace kforge::ir
