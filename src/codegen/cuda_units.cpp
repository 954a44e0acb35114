// Merging CUDA source units into one translation unit (cuda_units.h).
#include "codegen/cuda_units.h"

#include <cctype>
#include <filesystem>
#include <sstream>

namespace kforge::codegen {

namespace {

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// The preprocessor directive of a line ("include", "define", ...) and the text after it; "" if none.
std::string directive(const std::string& line, std::string* rest) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return "";
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos) return "";
  size_t j = i;
  while (j < line.size() && is_word_char(line[j])) ++j;
  size_t r = line.find_first_not_of(" \t", j);
  *rest = r == std::string::npos ? "" : line.substr(r);
  return line.substr(i, j - i);
}

}  // namespace

std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += is_word_char(c) ? c : '_';
  return out;
}

StatusOr<UnitParts> split_unit(const CudaUnit& unit) {
  UnitParts parts;
  int depth = 0;
  std::istringstream lines(unit.code);
  for (std::string line; std::getline(lines, line);) {
    std::string rest;
    const std::string d = directive(line, &rest);
    if (d == "if" || d == "ifdef" || d == "ifndef") ++depth;
    if (d == "endif") --depth;
    if (d == "pragma" && rest.rfind("once", 0) == 0) continue;
    if (d == "include") {
      if (rest.find("kforge_runtime.cuh") != std::string::npos) continue;
      if (depth > 0) return internal_error(unit.file + " has an #include inside an #if block: " + line);
      parts.includes.push_back("#include " + rest);
      continue;
    }
    if (d == "define") {
      size_t e = 0;
      while (e < rest.size() && is_word_char(rest[e])) ++e;
      parts.macros.push_back(rest.substr(0, e));
    }
    parts.body += line + "\n";
  }
  return parts;
}

StatusOr<MergedUnits> merge_units(const std::vector<CudaUnit>& units, const std::set<std::string>& kept_macros,
                                  size_t first_index, UnitEdit edit) {
  MergedUnits merged;
  std::set<std::string> seen;
  std::ostringstream body;
  for (size_t i = 0; i < units.size(); ++i) {
    KF_ASSIGN_OR_RETURN(UnitParts parts, split_unit(units[i]));
    for (const auto& l : parts.includes) {
      if (seen.insert(l).second) merged.includes.push_back(l);
    }
    if (edit != nullptr) KF_RETURN_IF_ERROR(edit(parts, units[i].file));
    const std::string ns = "kforge_unit_" + std::to_string(first_index + i) + "_" +
                           identifier(std::filesystem::path(units[i].file).stem().string());
    body << "// ---- " << units[i].file << " ----\n"
         << "namespace " << ns << " {\n"
         << parts.body << "}  // namespace " << ns << "\n";
    std::set<std::string> undone(kept_macros.begin(), kept_macros.end());
    for (const auto& m : parts.macros) {
      if (undone.insert(m).second) body << "#undef " << m << "\n";
    }
    body << "\n";
  }
  merged.body = body.str();
  return merged;
}

}  // namespace kforge::codegen
