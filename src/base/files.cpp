// File-system helpers: read, atomic write, content hash, location of the executable.
#include "base/files.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace kforge {

namespace fs = std::filesystem;

StatusOr<std::string> read_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return not_found("no such file: " + path.string());
  if (fs::is_directory(path, ec)) return invalid_argument(path.string() + " is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open " + path.string() + " for reading (check its permissions)");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return external_error("reading " + path.string() + " failed");
  return ss.str();
}

Status write_file(const fs::path& path, std::string_view contents) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec) return external_error("cannot create directory " + path.parent_path().string() + ": " + ec.message());
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return external_error("cannot open " + tmp.string() + " for writing");
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!out) return external_error("writing " + tmp.string() + " failed (disk full?)");
  }
  fs::rename(tmp, path, ec);
  if (ec) return external_error("cannot move " + tmp.string() + " to " + path.string() + ": " + ec.message());
  return Status::ok();
}

std::string content_hash(std::string_view bytes) {
  // FNV-1a over 128 bits (prime 2^88 + 2^8 + 0x3b), computed with two 64-bit halves.
  unsigned __int128 h = (static_cast<unsigned __int128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
  const unsigned __int128 prime = (static_cast<unsigned __int128>(1) << 88) | 0x13bULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= prime;
  }
  std::array<char, 33> out{};
  std::snprintf(out.data(), out.size(), "%016llx%016llx", static_cast<unsigned long long>(h >> 64),
                static_cast<unsigned long long>(h));
  return {out.data(), 32};
}

fs::path executable_dir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fs::current_path();
  return self.parent_path();
}

namespace {

std::string kforge_home_env() {
  const char* v = std::getenv("KFORGE_HOME");
  return v ? v : "";
}

}  // namespace

StatusOr<std::filesystem::path> kforge_home() {
  std::vector<std::filesystem::path> candidates;
  if (!kforge_home_env().empty()) candidates.emplace_back(kforge_home_env());
  std::filesystem::path exe = executable_dir();
  candidates.push_back(exe.parent_path());                // build/kforge -> repo
  candidates.push_back(exe.parent_path().parent_path());  // build/<preset>/kforge -> repo
#ifdef KFORGE_SOURCE_DIR
  candidates.emplace_back(KFORGE_SOURCE_DIR);
#endif
  for (const auto& c : candidates) {
    std::error_code ec;
    if (std::filesystem::exists(c / "src/codegen/runtime/kforge_runtime.cuh", ec) &&
        std::filesystem::exists(c / "python/kforge", ec))
      return c;
  }
  return not_found(
      "cannot find the kforge tree (src/codegen/runtime and python/kforge): set KFORGE_HOME to the repository root");
}

}  // namespace kforge
