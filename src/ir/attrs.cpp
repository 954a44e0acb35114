// Typed access to node attributes; a wrong type here is an invariant violation (schemas are checked on parse).
#include "ir/attrs.h"

#include "base/check.h"

namespace kforge::ir {

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kBool: return "bool";
    case AttrType::kStr: return "str";
    case AttrType::kInts: return "list of ints";
    case AttrType::kDType: return "dtype";
    case AttrType::kScalar: return "number";
  }
  return "?";
}

const AttrValue& Attrs::get(const std::string& name) const {
  auto it = values_.find(name);
  KF_CHECK(it != values_.end()) << "attr '" << name << "' is not set";
  return it->second;
}

bool Attrs::is_null(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() || std::holds_alternative<std::monostate>(it->second);
}

int64_t Attrs::i(const std::string& name) const {
  const auto& v = get(name);
  if (auto* p = std::get_if<int64_t>(&v)) return *p;
  if (auto* p = std::get_if<bool>(&v)) return *p ? 1 : 0;
  KF_CHECK(false) << "attr '" << name << "' is not an int";
  return 0;
}

double Attrs::f(const std::string& name) const {
  const auto& v = get(name);
  if (auto* p = std::get_if<double>(&v)) return *p;
  if (auto* p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  KF_CHECK(false) << "attr '" << name << "' is not a number";
  return 0;
}

bool Attrs::b(const std::string& name) const {
  const auto& v = get(name);
  if (auto* p = std::get_if<bool>(&v)) return *p;
  KF_CHECK(false) << "attr '" << name << "' is not a bool";
  return false;
}

const std::string& Attrs::s(const std::string& name) const {
  const auto& v = get(name);
  auto* p = std::get_if<std::string>(&v);
  KF_CHECK(p != nullptr) << "attr '" << name << "' is not a string";
  return *p;
}

const std::vector<int64_t>& Attrs::ints(const std::string& name) const {
  const auto& v = get(name);
  auto* p = std::get_if<std::vector<int64_t>>(&v);
  KF_CHECK(p != nullptr) << "attr '" << name << "' is not a list of ints";
  return *p;
}

}  // namespace kforge::ir
