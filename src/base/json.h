// The JSON library of the project (nlohmann-json) and helpers for reading it with clear errors.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace kforge {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Parses text; the error names `what` (a file name) and the byte offset.
StatusOr<Json> parse_json(const std::string& text, const std::string& what);

}  // namespace kforge
