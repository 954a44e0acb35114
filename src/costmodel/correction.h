// A learned correction of the roofline (issue #5): ridge regression, trained on the measurement
// database, of log10(measured / predicted) on the candidate features. The corrected time is the
// roofline's times 10^(the predicted log ratio). Its quality is a rank quality: Spearman's rho
// between predicted and measured times on measurements held out from training (by problem, so a
// held-out problem was never seen), against the roofline's own rho on the same rows.
#pragma once

#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "costmodel/measurements.h"

namespace kforge::costmodel {

struct Correction {
  std::vector<std::string> feature_names;
  std::vector<double> mean, scale;  // standardization of each feature (scale 1 for a constant one)
  std::vector<double> weights;
  double bias = 0;
  double lambda = 1.0;  // ridge penalty on the standardized weights
  int trained_on = 0;

  double log_ratio(const std::vector<double>& features) const;
  double corrected_seconds(double predicted_seconds, const std::vector<double>& features) const;
};

// Fits on rows that carry features (rows without are ignored); fewer than 2 such rows is an error.
StatusOr<Correction> fit_correction(const std::vector<Measurement>& rows, double lambda = 1.0);
OrderedJson correction_to_json(const Correction& c);
StatusOr<Correction> correction_from_json(const Json& j);
// Reads a correction written by `kforge costmodel fit --out FILE`.
StatusOr<Correction> read_correction(const std::string& path);

// Spearman's rank correlation (average ranks for ties); nullopt-like NaN for fewer than 2 values or
// a constant side.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

struct CorrectionReport {
  int train_rows = 0, held_out_rows = 0;
  int train_problems = 0, held_out_problems = 0;
  double spearman_roofline = 0;   // on the held-out rows
  double spearman_corrected = 0;  // on the held-out rows
  double median_abs_log10_error_roofline = 0;
  double median_abs_log10_error_corrected = 0;
};

// Splits `rows` by a hash of the problem name (about held_out_fraction of the problems held out),
// fits on the rest and measures both models on the held-out rows.
StatusOr<CorrectionReport> evaluate_correction(const std::vector<Measurement>& rows, double held_out_fraction,
                                               double lambda, Correction* fitted_on_train = nullptr);

}  // namespace kforge::costmodel
