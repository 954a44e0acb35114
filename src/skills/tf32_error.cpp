// The TF32 error estimate: magnitudes and errors forward through the graph, one rule per op family.
#include "skills/tf32_error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "kernels/split_tf32.h"

namespace kforge::skills {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using ir::OpFamily;
using ir::OpId;

double numel(const ir::Shape& s) {
  double n = 1;
  for (auto d : s) n *= static_cast<double>(d);
  return n;
}

// A value's distribution as the estimate sees it: mean and standard deviation of its elements.
struct Stat {
  double mean = 0;
  double std = 1;
  double rms() const { return std::sqrt(mean * mean + std * std); }
};

// A get_inputs() distribution (zero mean, unit scale when it is not known). Inputs computed in
// get_inputs() carry the moments the importer measured on one real draw (importer.py).
Stat dist_stat(const Json& d) {
  const std::string kind = d.is_object() ? d.value("kind", "") : "";
  if (d.is_object() && d.contains("moments") && d["moments"].is_object())
    return {d["moments"].value("mean", 0.0), d["moments"].value("std", 1.0)};
  if (kind == "normal") return {d.value("mean", 0.0), d.value("std", 1.0)};
  if (kind == "uniform" || kind == "randint") {
    const double lo = d.value("low", 0.0), hi = d.value("high", 1.0);
    return {(lo + hi) / 2, (hi - lo) / std::sqrt(12.0)};
  }
  if (kind == "zeros") return {0, 0};
  if (kind == "ones") return {1, 0};
  return {0, 1};
}

// A parameter's moments as the importer measured them on the model's own initial values (a custom init such
// as torchvision's kaiming_normal_(fan_out), BatchNorm's ones and zeros). Without them, one read as the weight
// or bias of a linear or convolution: torch's default init, uniform +-1/sqrt(fan_in) (fan_in = numel / w[0] for
// linear [out, in], conv [out, in/groups, k...] and, by torch's own convention, conv_transpose
// [in, out/groups, k...]). Any other parameter: unit scale.
Stat param_stat(const ir::Graph& g, const ir::GraphParam& p) {
  if (p.moments.is_object()) return {p.moments.value("mean", 0.0), p.moments.value("std", 1.0)};
  const ir::ValueIndex v = p.value;
  for (int n : g.users(v)) {
    const ir::Node& node = g.nodes()[static_cast<size_t>(n)];
    const auto family = ir::op_info(node.op).family;
    if (family != OpFamily::kLinear && family != OpFamily::kConv && family != OpFamily::kConvTranspose) continue;
    if (node.inputs.size() < 2 || node.inputs[0] == v) continue;
    const ir::Shape& w = g.type(node.inputs[1]).shape;
    if (w.size() < 2) continue;
    const double fan_in = numel(w) / static_cast<double>(w[0]);
    return {0, 1.0 / std::sqrt(3.0 * std::max(1.0, fan_in))};
  }
  return {0, 1};
}

// The expected largest of n independent standard normal draws (0 for one draw).
double expected_max_of(double n) {
  if (n <= 1) return 0;
  if (n <= 2) return 0.564;
  return std::sqrt(2 * std::log(n)) - 0.5;  // within ~0.3 of the exact value from n = 3 on
}

bool has_scalar(const ir::Node& n) {
  return n.attrs.has("scalar") && !n.attrs.is_null("scalar");
}

// Elements reduced by a reduce-family node (every element when dims is empty).
double reduced_count(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& x = g.type(n.inputs[0]).shape;
  const auto& dims = n.attrs.ints("dims");
  if (dims.empty()) return numel(x);
  double count = 1;
  for (auto d : dims) {
    const auto axis = d < 0 ? d + static_cast<int64_t>(x.size()) : d;
    if (axis >= 0 && axis < static_cast<int64_t>(x.size())) count *= static_cast<double>(x[static_cast<size_t>(axis)]);
  }
  return count;
}

// The reduction length of a contraction node: its inner dimension.
double contraction_length(const ir::Graph& g, const ir::Node& n) {
  const auto family = ir::op_info(n.op).family;
  auto shape = [&](size_t i) -> const ir::Shape& { return g.type(n.inputs[i]).shape; };
  switch (family) {
    case OpFamily::kLinear:
    case OpFamily::kMatmul:
    case OpFamily::kAttention: return shape(0).empty() ? 1.0 : static_cast<double>(shape(0).back());
    case OpFamily::kConv: return shape(1).empty() ? 1.0 : numel(shape(1)) / static_cast<double>(shape(1)[0]);
    case OpFamily::kConvTranspose:
      return shape(1).empty() ? 1.0 : numel(shape(1)) / std::max<double>(1.0, static_cast<double>(shape(1)[1]));
    case OpFamily::kEinsum: {
      // numel(a) * numel(b) / numel(out) is K^2 for a GEMM (times the batch for batched ones: larger, so safe)
      if (n.inputs.size() < 2) return 1.0;
      const double k2 = numel(shape(0)) * numel(shape(1)) / std::max(1.0, numel(g.type(n.output).shape));
      return std::sqrt(std::max(1.0, k2));
    }
    default: return 1.0;
  }
}

// How much a unary op can stretch a small change of its input (its Lipschitz constant near the
// input's scale; kInf: the op can jump or is unbounded near 0), and its output's distribution.
struct UnaryRule {
  double lipschitz;
  Stat out;
};
UnaryRule unary_rule(OpId op, const Stat& x) {
  const Stat centered{0, x.rms()};  // nonlinear: zero mean, the most mass near 0 for its scale
  switch (op) {
    case OpId::kNeg:
    case OpId::kIdentity:
    case OpId::kDropout: return {1, {op == OpId::kNeg ? -x.mean : x.mean, x.std}};
    case OpId::kRelu:
    case OpId::kLeakyRelu:
    case OpId::kHardTanh:
    case OpId::kClamp:
    case OpId::kAbs:
    case OpId::kSoftplus:
    case OpId::kElu: return {1, centered};
    case OpId::kTanh:
    case OpId::kSoftsign: return {1, {0, std::min(x.rms(), 1.0)}};
    case OpId::kSigmoid: return {0.25, {1 / (1 + std::exp(-x.mean)), std::min(0.25 * x.std, 0.5)}};
    case OpId::kHardSigmoid: return {1.0 / 6.0, {0.5, std::min(x.std / 6, 0.5)}};
    case OpId::kErf: return {1.13, {0, 1}};
    case OpId::kGelu:
    case OpId::kSilu:
    case OpId::kMish: return {1.13, centered};
    case OpId::kHardSwish: return {1.5, centered};
    case OpId::kSelu: return {1.76, {0, 1.76 * x.rms()}};
    case OpId::kExp: {
      // exp' = exp, at up to 6 sigma above the input's mean; the output log-normal
      const double grow = std::exp(std::min(x.mean + 6 * x.std, 80.0));
      const double mean = std::exp(std::min(x.mean + x.std * x.std / 2, 80.0));
      return {grow, {mean, mean * std::sqrt(std::expm1(std::min(x.std * x.std, 80.0)))}};
    }
    default:  // log, sqrt, rsqrt, reciprocal, sign, pow_scalar: unbounded near 0 or discontinuous
      return {kInf, centered};
  }
}

double scalar_of(const ir::Node& n) {
  return n.attrs.f("scalar");
}

// Errors times a factor where zero stays zero (0 * inf is no error, not NaN).
double scaled(double e, double factor) {
  return e == 0 ? 0 : e * factor;
}

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

// The chance that one element fails torch.allclose: |err| > atol + rtol |ref|, with err ~ N(0, sigma)
// and ref ~ N(mean, std) independent. Integrated over |err| (the part below atol never fails).
double element_failure_probability(double sigma, const Stat& ref, double atol, double rtol) {
  if (sigma == 0) return 0;
  if (std::isinf(sigma) || std::isnan(sigma)) return 1;
  const double hi = atol + 10 * sigma;
  if (hi <= atol) return 0;
  constexpr int kSteps = 400;
  const double step = (hi - atol) / kSteps;
  double p = 0;
  for (int i = 0; i < kSteps; ++i) {
    const double err = atol + (i + 0.5) * step;
    const double density = 2 * std::exp(-0.5 * err * err / (sigma * sigma)) / (sigma * std::sqrt(2 * M_PI));
    const double t = rtol > 0 ? (err - atol) / rtol : kInf;  // fails when |ref| < t
    double near_zero;
    if (std::isinf(t)) {
      near_zero = 1;
    } else if (ref.std <= 0 || std::isinf(ref.std)) {
      near_zero = std::abs(ref.mean) < t ? 1 : 0;
    } else {
      near_zero = normal_cdf((t - ref.mean) / ref.std) - normal_cdf((-t - ref.mean) / ref.std);
    }
    p += density * near_zero * step;
  }
  return std::min(1.0, p);
}

}  // namespace

Tf32ErrorEstimate estimate_tf32_error(const ir::Graph& g, const std::vector<int>& tf32_nodes, double atol, double rtol,
                                      const std::vector<int>& split_nodes) {
  Tf32ErrorEstimate est;
  const auto& values = g.values();
  std::vector<Stat> st(values.size());
  est.error.assign(values.size(), 0.0);
  auto& e = est.error;
  for (const auto& in : g.inputs()) st[static_cast<size_t>(in.value)] = dist_stat(in.dist);
  for (const auto& p : g.params()) st[static_cast<size_t>(p.value)] = param_stat(g, p);
  const std::set<int> tf32(tf32_nodes.begin(), tf32_nodes.end());
  const std::set<int> split(split_nodes.begin(), split_nodes.end());
  // one operand's TF32 rounding: uniform within +-2^-11 relative, so a standard deviation of 2^-11/sqrt(3)
  const double rounding = kTf32UnitRoundoff / std::sqrt(3.0) * std::sqrt(2.0);  // both operands

  for (size_t ni = 0; ni < g.nodes().size(); ++ni) {
    const ir::Node& n = g.nodes()[ni];
    const auto& info = ir::op_info(n.op);
    auto present = [&](size_t i) { return i < n.inputs.size() && n.inputs[i] != ir::kNoValue; };
    auto S = [&](size_t i) { return present(i) ? st[static_cast<size_t>(n.inputs[i])] : Stat{0, 0}; };
    auto E = [&](size_t i) { return present(i) ? e[static_cast<size_t>(n.inputs[i])] : 0.0; };
    double max_rms = 0, max_e = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      max_rms = std::max(max_rms, S(i).rms());
      max_e = std::max(max_e, E(i));
    }
    Stat out = present(0) ? S(0) : Stat{0, max_rms};
    double out_e = max_e;
    const double jump = max_e > 0 ? kInf : 0;  // an op that can jump under a nonzero error
    const bool in_tf32 = tf32.count(static_cast<int>(ni)) != 0;
    switch (info.family) {
      case OpFamily::kAttention: {
        // softmax(q k^T / sqrt(d)) v: the scores (magnitude rms(q) rms(k)) carry the operands' errors and
        // TF32's rounding; the weighted average of v carries them times v's scale
        const double mq = S(0).rms(), mk = S(1).rms(), mv = S(2).rms();
        const double score_e = std::hypot(E(0) * mk, E(1) * mq) + (in_tf32 ? rounding * mq * mk : 0);
        out = {S(2).mean, S(2).std};
        out_e = std::hypot(scaled(score_e, mv), E(2)) + (in_tf32 ? rounding * mv : 0);
        break;
      }
      case OpFamily::kLinear:
      case OpFamily::kMatmul:
      case OpFamily::kEinsum:
      case OpFamily::kConv:
      case OpFamily::kConvTranspose: {
        const double k = contraction_length(g, n);
        const Stat a = S(0), b = S(1);
        const double second = (a.std * a.std + a.mean * a.mean) * (b.std * b.std + b.mean * b.mean);
        out = {k * a.mean * b.mean, std::sqrt(k * std::max(0.0, second - a.mean * a.mean * b.mean * b.mean))};
        out_e = std::sqrt(k) * std::hypot(scaled(E(0), b.rms()), scaled(E(1), a.rms()));
        if (in_tf32) out_e += rounding * std::sqrt(k) * a.rms() * b.rms();
        if (split.count(static_cast<int>(ni)) != 0) {
          // partial sums S_k: mean k mu, variance k sigma^2; sum over k of E[S_k^2] = K^3 mu^2 / 3 + K^2 sigma^2 / 2
          const double mu = a.mean * b.mean, var = std::max(0.0, second - mu * mu);
          const double partials = std::sqrt(k * k * k * mu * mu / 3 + k * k * var / 2);
          // (the tensor cores' accumulation bias over one chain, kernels/split_tf32.h, scales same-signed sums
          // alike: split_tf32_contractions bounds it against the tolerance, not this estimate)
          out_e += kSplitTf32ProductError * std::sqrt(k) * a.rms() * b.rms() +
                   std::sqrt(2.0) * kFp32UnitRoundoff / std::sqrt(3.0) * partials;
        }
        if (info.family != OpFamily::kMatmul && info.family != OpFamily::kEinsum && present(2)) {
          out = {out.mean + S(2).mean, std::hypot(out.std, S(2).std)};
          out_e = std::hypot(out_e, E(2));
        }
        break;
      }
      case OpFamily::kUnary: {
        const UnaryRule r = unary_rule(n.op, S(0));
        out = r.out;
        out_e = scaled(E(0), r.lipschitz);
        break;
      }
      case OpFamily::kCast: break;
      case OpFamily::kBinary: {
        const bool scalar = has_scalar(n);
        const double c = scalar ? scalar_of(n) : 0;
        const Stat a = S(0), b = scalar ? Stat{c, 0} : S(1);
        switch (n.op) {
          case OpId::kAdd:
          case OpId::kSub: {
            const double sign = n.op == OpId::kSub ? -1 : 1;
            out = {a.mean + sign * b.mean, std::hypot(a.std, b.std)};
            out_e = std::hypot(E(0), E(1));
            break;
          }
          case OpId::kMul: {
            const double second = (a.std * a.std + a.mean * a.mean) * (b.std * b.std + b.mean * b.mean);
            out = {a.mean * b.mean, std::sqrt(std::max(0.0, second - a.mean * a.mean * b.mean * b.mean))};
            out_e = std::hypot(scaled(E(0), b.rms()), scaled(E(1), a.rms()));
            break;
          }
          case OpId::kDiv: {
            const bool reverse = n.attrs.has("reverse") && n.attrs.b("reverse");
            if (scalar && !reverse && c != 0) {
              out = {a.mean / c, a.std / std::abs(c)};
              out_e = E(0) / std::abs(c);
            } else {  // by a tensor, or a number by the tensor: unbounded near zero
              out = {0, kInf};
              out_e = jump;
            }
            break;
          }
          case OpId::kMaximum:
          case OpId::kMinimum: out = {0, std::max(a.rms(), b.rms())}; break;
          default:  // pow
            out = {0, kInf};
            out_e = jump;
        }
        break;
      }
      case OpFamily::kWhere:
        out = {0, std::max(S(1).rms(), S(2).rms())};
        out_e = E(0) > 0 ? kInf : std::max(E(1), E(2));
        break;
      case OpFamily::kCompare:
      case OpFamily::kArgReduce:
        out = {0.5, 0.5};
        out_e = jump;
        break;
      case OpFamily::kReduce: {
        const double count = reduced_count(g, n);
        const Stat x = S(0);
        switch (n.op) {
          case OpId::kSum:
            out = {count * x.mean, std::sqrt(count) * x.std};
            out_e = std::sqrt(count) * E(0);
            break;
          case OpId::kMean:
            out = {x.mean, x.std / std::sqrt(std::max(1.0, count))};
            out_e = E(0) / std::sqrt(std::max(1.0, count));
            break;
          case OpId::kAmax: out = {x.mean + x.std * expected_max_of(count), x.std}; break;
          case OpId::kAmin: out = {x.mean - x.std * expected_max_of(count), x.std}; break;
          case OpId::kLogSumExp: out = {x.mean + x.std * expected_max_of(count) + 0.5, x.std}; break;
          case OpId::kNorm:
            out = {std::sqrt(count) * x.rms(), x.rms()};
            out_e = std::sqrt(count) * E(0);
            break;
          case OpId::kVar:
            out = {x.std * x.std, x.std * x.std};
            out_e = scaled(E(0), 2 * x.rms());
            break;
          default: out = {0, kInf}; out_e = jump;  // prod
        }
        break;
      }
      case OpFamily::kSoftmax: {
        const ir::Shape& x = g.type(n.inputs[0]).shape;
        const auto dim = n.attrs.i("dim");
        const auto axis = dim < 0 ? dim + static_cast<int64_t>(x.size()) : dim;
        const double len =
            axis >= 0 && axis < static_cast<int64_t>(x.size()) ? static_cast<double>(x[static_cast<size_t>(axis)]) : 1;
        out = n.op == OpId::kSoftmax ? Stat{1 / len, 1 / len} : Stat{-std::log(len), S(0).std};
        out_e = 2 * E(0);
        break;
      }
      case OpFamily::kNorm: {
        // (x - mean) / std * w + b: the error over the input's spread, times the weight's scale
        const double w = present(1) ? S(1).rms() : 1.0;
        const bool running = n.op == OpId::kBatchNorm && !n.attrs.b("training");
        const Stat x = S(0);
        out = running ? Stat{x.mean * w, x.std * w} : Stat{present(2) ? S(2).mean : 0, w};
        out_e = running ? scaled(E(0), w) : (x.std > 0 ? scaled(E(0), w / x.std) : jump);
        break;
      }
      case OpFamily::kPool:
      case OpFamily::kAdaptivePool: {
        const double window = numel(g.type(n.inputs[0]).shape) / std::max(1.0, numel(g.type(n.output).shape));
        const Stat x = S(0);
        const bool max_pool = n.op == OpId::kMaxPool || n.op == OpId::kAdaptiveMaxPool;
        out = max_pool ? Stat{x.mean + x.std * expected_max_of(window), x.std} : x;
        break;
      }
      case OpFamily::kScan: {
        const auto dim = n.attrs.has("dim") ? n.attrs.i("dim") : 0;
        const ir::Shape& x = g.type(n.inputs[0]).shape;
        const auto axis = dim < 0 ? dim + static_cast<int64_t>(x.size()) : dim;
        const double len = axis >= 0 && axis < static_cast<int64_t>(x.size())
                               ? static_cast<double>(x[static_cast<size_t>(axis)])
                               : numel(x);
        if (n.op == OpId::kCumsum) {
          out = {len * S(0).mean, std::sqrt(len) * S(0).std};
          out_e = std::sqrt(len) * E(0);
        } else {
          out = {0, kInf};
          out_e = jump;
        }
        break;
      }
      case OpFamily::kLoss:
      case OpFamily::kTripletLoss:
        out = {max_rms * max_rms, max_rms * max_rms};
        out_e = scaled(max_e, 2 * std::max(1.0, max_rms));
        break;
      case OpFamily::kFull:
        out = {n.attrs.has("value") ? n.attrs.f("value") : 1, 0};
        out_e = 0;
        break;
      case OpFamily::kCat: out = {0, max_rms}; break;
      default: break;  // layout: reshape, permute, expand, slice, select, flip, diag, triangle
    }
    if (std::isnan(out_e)) out_e = kInf;
    if (std::isnan(out.mean) || std::isnan(out.std)) out = {0, kInf};
    st[static_cast<size_t>(n.output)] = out;
    e[static_cast<size_t>(n.output)] = out_e;
  }
  // Expected failing elements over the protocol's input sets, each output's error widened by the margin.
  for (ir::ValueIndex o : g.outputs()) {
    const double sigma = kTf32ErrorMargin * e[static_cast<size_t>(o)];
    if (sigma == 0) continue;
    const double failures = kTf32VerifiedInputSets * numel(g.type(o).shape) *
                            element_failure_probability(sigma, st[static_cast<size_t>(o)], atol, rtol);
    if (failures > est.expected_failures || est.output.empty()) {
      est.expected_failures = failures;
      est.sigma = sigma;
      est.output = g.value(o).id;
    }
  }
  return est;
}

int contraction_node_of(const ir::Graph& g, const schedule::Kernel& k) {
  for (int n : k.nodes) {
    switch (ir::op_info(g.nodes()[static_cast<size_t>(n)].op).family) {
      case OpFamily::kLinear:
      case OpFamily::kMatmul:
      case OpFamily::kEinsum:
      case OpFamily::kConv:
      case OpFamily::kConvTranspose:
      case OpFamily::kAttention: return n;
      default: break;
    }
  }
  return -1;
}

std::vector<int> tf32_nodes_of(const ir::Graph& g, const schedule::Schedule& s) {
  std::vector<int> out;
  for (const auto& k : s.kernels) {
    if (k.impl != schedule::Impl::kLibrary) continue;
    const int node = contraction_node_of(g, k);
    if (node < 0 || g.type(g.nodes()[static_cast<size_t>(node)].output).dtype != ir::DType::kFloat32) continue;
    const bool cublas =
        k.strategy == schedule::Strategy::kCublasGemm || k.strategy == schedule::Strategy::kCublasAttention;
    const bool other_conv_engine =
        (k.strategy == schedule::Strategy::kCudnnConv || k.strategy == schedule::Strategy::kCudnnConvTranspose) &&
        (k.knob(schedule::Knob::kChannelsLast, 0) || k.knob(schedule::Knob::kEngineSearch, 0) ||
         k.knob(schedule::Knob::kImplicitGemm, 0));
    if ((cublas && s.precision == "tf32") || other_conv_engine) out.push_back(node);
  }
  return out;
}

std::vector<int> split_tf32_nodes_of(const ir::Graph& g, const schedule::Schedule& s) {
  std::vector<int> out;
  if (s.precision != "3xtf32") return out;
  for (const auto& k : s.kernels) {
    if (k.impl != schedule::Impl::kLibrary || k.strategy != schedule::Strategy::kCublasGemm) continue;
    const int node = contraction_node_of(g, k);
    if (node >= 0 && g.type(g.nodes()[static_cast<size_t>(node)].output).dtype == ir::DType::kFloat32)
      out.push_back(node);
  }
  return out;
}

std::string tf32_error_exceeds_tolerance(const ir::Graph& g, const schedule::Schedule& s, const std::vector<int>& extra,
                                         const std::vector<int>& extra_split) {
  std::vector<int> nodes = tf32_nodes_of(g, s);
  nodes.insert(nodes.end(), extra.begin(), extra.end());
  std::vector<int> split = split_tf32_nodes_of(g, s);
  split.insert(split.end(), extra_split.begin(), extra_split.end());
  // the schedule keeps one tolerance, min(atol, rtol): both protocols have atol = rtol
  const Tf32ErrorEstimate est = estimate_tf32_error(g, nodes, s.tolerance, s.tolerance, split);
  if (est.expected_failures <= kTf32AllowedFailures) return "";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "TF32 or 3xTF32 would fail verification: at output %s an estimated error of %.3g (standard deviation, "
                "margin included) gives %.3g expected elements outside the tolerance %g (skills/tf32_error.h)",
                est.output.c_str(), est.sigma, est.expected_failures, s.tolerance);
  return buf;
}

}  // namespace kforge::skills
