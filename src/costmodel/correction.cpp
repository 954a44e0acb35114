// Ridge regression by the normal equations (a dozen features: a small dense solve), Spearman's rho.
#include "costmodel/correction.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>

#include "base/files.h"

namespace kforge::costmodel {

namespace {

bool usable(const Measurement& m) {
  return m.features.size() == feature_names().size() && m.predicted_seconds > 0 && m.measured_seconds > 0;
}

double target_of(const Measurement& m) {
  return std::log10(m.measured_seconds) - std::log10(m.predicted_seconds);
}

// Solves A x = b (A symmetric positive definite after the ridge term) by Gaussian elimination with
// partial pivoting; false when singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>* x) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    if (std::abs(a[p][c]) < 1e-12) return false;
    std::swap(a[p], a[c]);
    std::swap(b[p], b[c]);
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  x->assign(n, 0);
  for (size_t c = n; c-- > 0;) {
    double s = b[c];
    for (size_t k = c + 1; k < n; ++k) s -= a[c][k] * (*x)[k];
    (*x)[c] = s / a[c][c];
  }
  return true;
}

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool held_out(const std::string& problem, double fraction) {
  // FNV's last bits, through SplitMix64's finalizer: names that differ in one character spread evenly.
  uint64_t x = std::stoull(content_hash(problem).substr(16, 16), nullptr, 16);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<double>(x % 10000) < fraction * 10000.0;
}

}  // namespace

double Correction::log_ratio(const std::vector<double>& features) const {
  double y = bias;
  for (size_t i = 0; i < weights.size() && i < features.size(); ++i)
    y += weights[i] * (features[i] - mean[i]) / scale[i];
  return y;
}

double Correction::corrected_seconds(double predicted_seconds, const std::vector<double>& features) const {
  return predicted_seconds * std::pow(10.0, log_ratio(features));
}

StatusOr<Correction> fit_correction(const std::vector<Measurement>& rows, double lambda) {
  std::vector<const Measurement*> use;
  for (const auto& m : rows)
    if (usable(m)) use.push_back(&m);
  if (use.size() < 2)
    return invalid_argument("fitting the cost-model correction needs at least 2 measurements with features, got " +
                            std::to_string(use.size()) + " (record some with `kforge bench --db FILE` on a GPU)");
  if (!(lambda >= 0)) return invalid_argument("the ridge penalty must be >= 0");
  const size_t d = feature_names().size();
  const double n = static_cast<double>(use.size());
  Correction c;
  c.feature_names = feature_names();
  c.lambda = lambda;
  c.trained_on = static_cast<int>(use.size());
  c.mean.assign(d, 0);
  c.scale.assign(d, 0);
  for (const auto* m : use)
    for (size_t i = 0; i < d; ++i) c.mean[i] += m->features[i] / n;
  for (const auto* m : use)
    for (size_t i = 0; i < d; ++i) c.scale[i] += (m->features[i] - c.mean[i]) * (m->features[i] - c.mean[i]) / n;
  for (auto& s : c.scale) s = s > 1e-18 ? std::sqrt(s) : 1.0;
  for (const auto* m : use) c.bias += target_of(*m) / n;
  // Normal equations on standardized features and the centred target: (X'X + lambda n I) w = X'y.
  std::vector<std::vector<double>> a(d, std::vector<double>(d, 0));
  std::vector<double> b(d, 0);
  for (const auto* m : use) {
    std::vector<double> z(d);
    for (size_t i = 0; i < d; ++i) z[i] = (m->features[i] - c.mean[i]) / c.scale[i];
    const double y = target_of(*m) - c.bias;
    for (size_t i = 0; i < d; ++i) {
      b[i] += z[i] * y;
      for (size_t k = 0; k < d; ++k) a[i][k] += z[i] * z[k];
    }
  }
  for (size_t i = 0; i < d; ++i) a[i][i] += lambda * n + 1e-9;
  if (!solve(a, b, &c.weights)) return internal_error("the correction's normal equations are singular");
  return c;
}

OrderedJson correction_to_json(const Correction& c) {
  OrderedJson j;
  j["format"] = "kforge.costmodel_correction/1";
  j["target"] = "log10(measured_seconds / roofline_seconds)";
  j["feature_names"] = c.feature_names;
  j["mean"] = c.mean;
  j["scale"] = c.scale;
  j["weights"] = c.weights;
  j["bias"] = c.bias;
  j["lambda"] = c.lambda;
  j["trained_on"] = c.trained_on;
  return j;
}

StatusOr<Correction> correction_from_json(const Json& j) {
  if (!j.is_object() || j.value("format", "") != "kforge.costmodel_correction/1")
    return invalid_argument("not a kforge cost-model correction (format kforge.costmodel_correction/1)");
  Correction c;
  try {
    c.feature_names = j.at("feature_names").get<std::vector<std::string>>();
    c.mean = j.at("mean").get<std::vector<double>>();
    c.scale = j.at("scale").get<std::vector<double>>();
    c.weights = j.at("weights").get<std::vector<double>>();
    c.bias = j.at("bias").get<double>();
    c.lambda = j.value("lambda", 1.0);
    c.trained_on = j.value("trained_on", 0);
  } catch (const std::exception& e) {
    return invalid_argument(std::string("cost-model correction: ") + e.what());
  }
  if (c.feature_names != feature_names() || c.mean.size() != c.feature_names.size() ||
      c.scale.size() != c.mean.size() || c.weights.size() != c.mean.size())
    return invalid_argument("cost-model correction: fitted on another feature set than this kforge's; fit it again");
  return c;
}

StatusOr<Correction> read_correction(const std::string& path) {
  auto text = read_file(path);
  if (!text.is_ok())
    return not_found(path + " cannot be read: write a correction with `kforge costmodel fit --db DB --out " + path +
                     "`");
  KF_ASSIGN_OR_RETURN(Json j, parse_json(*text, path));
  auto c = correction_from_json(j);
  if (!c.is_ok()) return invalid_argument(path + ": " + c.status().message());
  return c;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a.size() != b.size() || a.size() < 2) return nan;
  const auto ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa == 0 || sbb == 0) return nan;
  return sab / std::sqrt(saa * sbb);
}

StatusOr<CorrectionReport> evaluate_correction(const std::vector<Measurement>& rows, double held_out_fraction,
                                               double lambda, Correction* fitted_on_train) {
  if (!(held_out_fraction > 0 && held_out_fraction < 1))
    return invalid_argument("the held-out fraction must be between 0 and 1 (exclusive)");
  std::vector<Measurement> train, test;
  std::set<std::string> train_problems, test_problems;
  for (const auto& m : rows) {
    if (!usable(m)) continue;
    if (held_out(m.problem, held_out_fraction)) {
      test.push_back(m);
      test_problems.insert(m.problem);
    } else {
      train.push_back(m);
      train_problems.insert(m.problem);
    }
  }
  if (test.size() < 2)
    return invalid_argument("too few measurements to hold some out: " + std::to_string(test.size()) +
                            " held-out rows (record more problems)");
  auto c = fit_correction(train, lambda);
  if (!c.is_ok()) return c.status();
  CorrectionReport r;
  r.train_rows = static_cast<int>(train.size());
  r.held_out_rows = static_cast<int>(test.size());
  r.train_problems = static_cast<int>(train_problems.size());
  r.held_out_problems = static_cast<int>(test_problems.size());
  std::vector<double> measured, roofline, corrected, err_roof, err_corr;
  for (const auto& m : test) {
    const double fixed = c->corrected_seconds(m.predicted_seconds, m.features);
    measured.push_back(m.measured_seconds);
    roofline.push_back(m.predicted_seconds);
    corrected.push_back(fixed);
    err_roof.push_back(std::abs(std::log10(m.predicted_seconds / m.measured_seconds)));
    err_corr.push_back(std::abs(std::log10(fixed / m.measured_seconds)));
  }
  r.spearman_roofline = spearman(roofline, measured);
  r.spearman_corrected = spearman(corrected, measured);
  r.median_abs_log10_error_roofline = median_of(err_roof);
  r.median_abs_log10_error_corrected = median_of(err_corr);
  if (fitted_on_train) *fitted_on_train = *c;
  return r;
}

}  // namespace kforge::costmodel
