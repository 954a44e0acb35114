// GAE and explained variance (advantage.h).
#include "rl/advantage.h"

#include <cstddef>

#include "base/check.h"

namespace kforge::rl {

std::vector<double> gae(const std::vector<double>& rewards, const std::vector<double>& values, double gamma,
                        double lambda) {
  KF_CHECK(rewards.size() == values.size()) << "gae: " << rewards.size() << " rewards, " << values.size() << " values";
  std::vector<double> advantages(rewards.size(), 0.0);
  double running = 0;
  for (size_t i = rewards.size(); i-- > 0;) {
    double next_value = i + 1 < values.size() ? values[i + 1] : 0.0;
    double delta = rewards[i] + gamma * next_value - values[i];
    running = delta + gamma * lambda * running;
    advantages[i] = running;
  }
  return advantages;
}

double explained_variance(const std::vector<double>& predicted, const std::vector<double>& target) {
  KF_CHECK(predicted.size() == target.size());
  if (target.empty()) return 0;
  double n = static_cast<double>(target.size());
  double mean_t = 0, mean_r = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    mean_t += target[i] / n;
    mean_r += (target[i] - predicted[i]) / n;
  }
  double var_t = 0, var_r = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    double r = target[i] - predicted[i];
    var_t += (target[i] - mean_t) * (target[i] - mean_t) / n;
    var_r += (r - mean_r) * (r - mean_r) / n;
  }
  if (var_t <= 1e-12) return 0;
  return 1 - var_r / var_t;
}

}  // namespace kforge::rl
