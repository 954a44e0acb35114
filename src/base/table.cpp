// Table rendering and human-readable units.
#include "base/table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace kforge {

namespace {

bool looks_numeric(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || (s[0] == '-' && s.size() > 1));
}

}  // namespace

std::string Table::render() const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& r : rows_) {
    for (size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::ostringstream os;
  auto line = [&](const std::vector<std::string>& r) {
    std::string text;
    for (size_t c = 0; c < width.size(); ++c) {
      std::string cell = c < r.size() ? r[c] : "";
      std::string pad(width[c] - cell.size(), ' ');
      text += (looks_numeric(cell) && c > 0) ? pad + cell : cell + pad;
      if (c + 1 < width.size()) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    os << text << "\n";
  };
  size_t total = 0;
  for (auto w : width) total += w + 2;
  std::string rule(total > 2 ? total - 2 : 0, '-');
  line(header_);
  os << rule << "\n";
  for (const auto& r : rows_) {
    if (r.empty()) {
      os << rule << "\n";
    } else {
      line(r);
    }
  }
  return os.str();
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  } else if (s < 1.0) {
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  }
  return buf;
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

}  // namespace kforge
