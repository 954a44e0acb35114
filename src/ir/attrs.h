// Attribute values of IR nodes and the schema types they are checked against.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace kforge::ir {

// null | bool | int | float | string | list of ints. A `scalar` attr holds int or float.
using AttrValue = std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>>;

enum class AttrType { kInt, kFloat, kBool, kStr, kInts, kDType, kScalar };

const char* attr_type_name(AttrType t);

// Attributes of one node by name; every attr of the op's schema is present after parsing.
class Attrs {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  bool is_null(const std::string& name) const;
  void set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  const AttrValue& get(const std::string& name) const;

  int64_t i(const std::string& name) const;
  double f(const std::string& name) const;  // int values widen
  bool b(const std::string& name) const;
  const std::string& s(const std::string& name) const;
  const std::vector<int64_t>& ints(const std::string& name) const;

  const std::map<std::string, AttrValue>& all() const { return values_; }
  bool operator==(const Attrs& o) const { return values_ == o.values_; }

 private:
  std::map<std::string, AttrValue> values_;
};

}  // namespace kforge::ir
