// Plain-text tables for people: aligned columns, a header rule, right-aligned numbers.
#pragma once

#include <string>
#include <vector>

namespace kforge {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void add_rule() { rows_.push_back({}); }
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

// "1.50" for fixed(1.5, 2): printf's %.*f
std::string fixed(double v, int digits);
// "12.3 us", "4.56 ms", "1.20 s"
std::string format_seconds(double s);
// "1.5 GB", "12 KB"
std::string format_bytes(double b);

}  // namespace kforge
