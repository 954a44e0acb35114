// Element types of graph values, with their sizes and C/CUDA spellings.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kforge::ir {

enum class DType { kFloat32, kFloat16, kBFloat16, kFloat64, kInt64, kInt32, kInt8, kUInt8, kBool };

std::string_view dtype_name(DType t);                    // "float32"
std::optional<DType> dtype_from_name(std::string_view);  // inverse of dtype_name
std::string_view dtype_c_type(DType t);                  // "float", "int64_t", "bool", "__half", ...
size_t dtype_size(DType t);
bool is_floating(DType t);
bool is_integral(DType t);  // bool counts as integral here

// torch's type promotion for two tensor operands.
DType promote(DType a, DType b);

}  // namespace kforge::ir
