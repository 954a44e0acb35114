// DType names, sizes and torch's promotion lattice (bool < integers < floats).
#include "ir/dtype.h"

#include <array>

namespace kforge::ir {

namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::string_view c_type;
  size_t size;
  int rank;  // position in the promotion order
};

constexpr std::array<DTypeInfo, 9> kInfos = {{
    {DType::kBool, "bool", "bool", 1, 0},
    {DType::kUInt8, "uint8", "uint8_t", 1, 1},
    {DType::kInt8, "int8", "int8_t", 1, 2},
    {DType::kInt32, "int32", "int32_t", 4, 3},
    {DType::kInt64, "int64", "int64_t", 8, 4},
    {DType::kFloat16, "float16", "__half", 2, 5},
    {DType::kBFloat16, "bfloat16", "__nv_bfloat16", 2, 5},
    {DType::kFloat32, "float32", "float", 4, 6},
    {DType::kFloat64, "float64", "double", 8, 7},
}};

const DTypeInfo& info(DType t) {
  for (const auto& i : kInfos) {
    if (i.type == t) return i;
  }
  return kInfos[0];
}

}  // namespace

std::string_view dtype_name(DType t) {
  return info(t).name;
}
std::string_view dtype_c_type(DType t) {
  return info(t).c_type;
}
size_t dtype_size(DType t) {
  return info(t).size;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfos) {
    if (i.name == name) return i.type;
  }
  return std::nullopt;
}

bool is_floating(DType t) {
  return info(t).rank >= 5;
}
bool is_integral(DType t) {
  return !is_floating(t);
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::kFloat16 && b == DType::kBFloat16) || (a == DType::kBFloat16 && b == DType::kFloat16)) {
    return DType::kFloat32;
  }
  return info(a).rank >= info(b).rank ? a : b;
}

}  // namespace kforge::ir
