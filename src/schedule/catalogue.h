// The kernel catalogue's vocabulary: strategies (code templates) and knobs (their parameters), each declared
// once in a .def registry (strategies.def, knobs.def) and used as enums everywhere below the JSON.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kforge::schedule {

enum class Strategy : unsigned char {
#define KF_STRATEGY(id, name, what) k##id,
#include "schedule/strategies.def"
#undef KF_STRATEGY
};

enum class Knob : unsigned char {
#define KF_KNOB(id, name, what) k##id,
#include "schedule/knobs.def"
#undef KF_KNOB
};

constexpr size_t kNumStrategies = 0
#define KF_STRATEGY(id, name, what) +1
#include "schedule/strategies.def"
#undef KF_STRATEGY
    ;
constexpr size_t kNumKnobs = 0
#define KF_KNOB(id, name, what) +1
#include "schedule/knobs.def"
#undef KF_KNOB
    ;

std::string_view strategy_name(Strategy s);     // its name in schedule JSON: "cublas_gemm"
std::string_view strategy_summary(Strategy s);  // what the template is, for people
std::optional<Strategy> strategy_named(std::string_view name);
std::string strategy_names();  // "alias, elementwise, ...": for messages

std::string_view knob_name(Knob k);
std::string_view knob_summary(Knob k);
std::optional<Knob> knob_named(std::string_view name);
std::string knob_names();

}  // namespace kforge::schedule
