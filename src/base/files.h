// File-system helpers that report failures as Status: read, atomic write, content hashing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kforge {

StatusOr<std::string> read_file(const std::filesystem::path& path);

// Writes through a temporary file and rename, so readers never see half a file.
Status write_file(const std::filesystem::path& path, std::string_view contents);

// 128-bit FNV-1a of the bytes, as 32 hex digits: the key of the build cache.
std::string content_hash(std::string_view bytes);

// The directory holding the running executable (for finding shipped python/ and runtime/).
std::filesystem::path executable_dir();

// The kforge source tree (src/codegen/runtime and python/kforge): $KFORGE_HOME, then the tree
// above the executable (build/kforge, build/<preset>/kforge, .gpu/kforge), then the tree it was
// built from. A clear error when none has them.
StatusOr<std::filesystem::path> kforge_home();

}  // namespace kforge
