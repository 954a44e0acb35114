// Advantage estimation and critic diagnostics on plain numbers (no torch): GAE and explained variance.
#pragma once

#include <vector>

namespace kforge::rl {

// Generalized advantage estimation over one finished trajectory: rewards r_0..r_{T-1}, the critic's
// values V(s_0)..V(s_{T-1}), V(s_T) = 0 (the episode ended).
//   delta_t = r_t + gamma V(s_{t+1}) - V(s_t),   A_t = sum_l (gamma lambda)^l delta_{t+l}
// The critic's regression targets are V(s_t) + A_t.
std::vector<double> gae(const std::vector<double>& rewards, const std::vector<double>& values, double gamma,
                        double lambda);

// 1 - Var(target - predicted) / Var(target); 0 when the targets do not vary.
double explained_variance(const std::vector<double>& predicted, const std::vector<double>& target);

}  // namespace kforge::rl
