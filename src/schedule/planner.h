// The first planner: one kernel per node, library calls for contractions and convolutions.
#pragma once

#include "schedule/schedule.h"

namespace kforge::schedule {

struct PlanOptions {
  std::string precision = "fp32";
  double tolerance = 1e-4;  // the protocol's atol = rtol: what precision skills may spend
};

// The strategy (code template) the first planner gives a node, and whether it is a library call.
struct DefaultStrategy {
  Impl impl;
  Strategy strategy;
};
DefaultStrategy default_strategy(const ir::Graph& g, const ir::Node& node);

Schedule plan_one_kernel_per_op(const ir::Graph& g, const PlanOptions& options = {});

}  // namespace kforge::schedule
