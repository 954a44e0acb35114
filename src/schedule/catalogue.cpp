// Names and summaries of the strategies and knobs, from their registries.
#include "schedule/catalogue.h"

#include <array>

namespace kforge::schedule {

namespace {

struct Entry {
  std::string_view name;
  std::string_view what;
};

constexpr std::array<Entry, kNumStrategies> kStrategies = {{
#define KF_STRATEGY(id, name, what) {name, what},
#include "schedule/strategies.def"
#undef KF_STRATEGY
}};

constexpr std::array<Entry, kNumKnobs> kKnobs = {{
#define KF_KNOB(id, name, what) {name, what},
#include "schedule/knobs.def"
#undef KF_KNOB
}};

template <size_t N>
std::optional<size_t> index_named(const std::array<Entry, N>& table, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (table[i].name == name) return i;
  }
  return std::nullopt;
}

template <size_t N>
std::string joined_names(const std::array<Entry, N>& table) {
  std::string out;
  for (const auto& e : table) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

}  // namespace

std::string_view strategy_name(Strategy s) {
  return kStrategies.at(static_cast<size_t>(s)).name;
}
std::string_view strategy_summary(Strategy s) {
  return kStrategies.at(static_cast<size_t>(s)).what;
}
std::optional<Strategy> strategy_named(std::string_view name) {
  auto i = index_named(kStrategies, name);
  if (!i) return std::nullopt;
  return static_cast<Strategy>(*i);
}
std::string strategy_names() {
  return joined_names(kStrategies);
}

std::string_view knob_name(Knob k) {
  return kKnobs.at(static_cast<size_t>(k)).name;
}
std::string_view knob_summary(Knob k) {
  return kKnobs.at(static_cast<size_t>(k)).what;
}
std::optional<Knob> knob_named(std::string_view name) {
  auto i = index_named(kKnobs, name);
  if (!i) return std::nullopt;
  return static_cast<Knob>(*i);
}
std::string knob_names() {
  return joined_names(kKnobs);
}

}  // namespace kforge::schedule
