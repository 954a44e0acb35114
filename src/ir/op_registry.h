// The op registry, expanded from ops.def: ids, names, families, input and attr schemas.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"

namespace kforge::ir {

enum class OpId {
#define KF_OP(id, name, family, inputs, attrs) k##id,
#include "ir/ops.def"
#undef KF_OP
};

enum class OpFamily {
#define KF_FAMILY(name) k##name,
#include "ir/op_families.def"
#undef KF_FAMILY
};

constexpr int kNumOps = 0
#define KF_OP(id, name, family, inputs, attrs) +1
#include "ir/ops.def"
#undef KF_OP
    ;

struct InputSpec {
  std::string name;
  bool optional = false;
  bool variadic = false;
};

struct AttrSpec {
  std::string name;
  AttrType type = AttrType::kInt;
  bool nullable = false;
  bool has_default = false;
  AttrValue default_value;
};

struct OpInfo {
  OpId id;
  std::string name;
  OpFamily family;
  std::vector<InputSpec> inputs;
  std::vector<AttrSpec> attrs;

  const AttrSpec* attr(std::string_view attr_name) const;
  size_t min_inputs() const;
  bool variadic() const { return !inputs.empty() && inputs.back().variadic; }
};

const OpInfo& op_info(OpId id);
std::optional<OpId> op_from_name(std::string_view name);
const std::vector<OpInfo>& all_ops();
std::string_view family_name(OpFamily f);

// Elementwise families (unary, binary, compare, logical, where, cast, full): each output element depends only
// on the operands' elements at the same (broadcast) index, so chains of them fuse into one kernel.
bool is_elementwise(OpFamily f);

}  // namespace kforge::ir
