// conv_channels_last: legality, profitability and the knob.
#include "skills/conv_channels_last.h"

#include "skills/precision.h"

namespace kforge::skills {

namespace {

double prod_from(const ir::Shape& s, size_t from) {
  double p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= static_cast<double>(s[i]);
  return p;
}

// Why kernel k cannot run its convolution channels-last ("" when it can and it pays).
std::string illegal(const ir::Graph& g, const schedule::Schedule& s, const schedule::Kernel& k) {
  if (std::string why = another_conv_engine_illegal(g, s, k); !why.empty()) return why;
  if (k.knob(schedule::Knob::kChannelsLast, 0) != 0) return "already channels-last";
  const ir::Node& conv = g.nodes()[static_cast<size_t>(k.nodes.front())];
  const bool transpose = ir::op_info(conv.op).family == ir::OpFamily::kConvTranspose;
  const ir::TensorType& x = g.type(conv.inputs[0]);
  const ir::TensorType& w = g.type(conv.inputs[1]);
  const ir::TensorType& y = g.type(conv.output);
  if (y.dtype != ir::DType::kFloat32 || x.dtype != ir::DType::kFloat32) return "not float32";
  if (conv.attrs.i("groups") != 1) return "grouped";
  const size_t sp = x.shape.size() >= 2 ? x.shape.size() - 2 : 0;
  // Run 6 (bench/NOTES.md) took 1-d and 2-d convs out: our first transposes (32x32 scalar tiles) ran at
  // half Inductor's rate and ate the engine's gain. With the 16-byte tiles and the gather, run 7's
  // profile put level2/1 at 1.82 ms of kernels and level1/50 at 1.60 (compile 1.63 and 1.62 in the same
  // call; our NCHW programs 2.38 and 2.10 in the call before), level1/55 at 3.86 (eager, on the NCHW
  // engine, 3.81 in the same call). So every spatial rank again.
  if (sp < 1 || sp > 3) return "cuDNN's channels-last convs have 1 to 3 spatial dims";
  if (x.numel() == 0 || y.numel() == 0) return "empty";
  if (transpose) {
    const auto opad = conv.attrs.ints("output_padding");
    const auto stride = conv.attrs.ints("stride");
    for (size_t i = 0; i < opad.size() && i < stride.size(); ++i) {
      if (opad[i] >= stride[i]) return "output_padding >= stride (no cuDNN path)";
    }
  }
  const double scratch = static_cast<double>(x.bytes() + w.bytes() + y.bytes());
  if (scratch > static_cast<double>(kMaxChannelsLastScratch)) return "the channels-last copies would exceed 8 GiB";
  // FLOPs: 2 * output * (C_in/groups * window) for conv, 2 * input * (C_out/groups * window) transposed.
  const double flops = 2.0 * static_cast<double>(transpose ? x.numel() : y.numel()) * prod_from(w.shape, 1);
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != ir::kNoValue;
  // The pass back replaces the bias pass or the epilogue's in-place pass; otherwise it is extra.
  const bool pass_replaced = has_bias || k.nodes.size() > 1;
  const double extra =
      2.0 * static_cast<double>(x.bytes() + w.bytes()) + (pass_replaced ? 0.0 : 2.0 * static_cast<double>(y.bytes()));
  if (flops < kMinFlopsPerExtraByte * extra) return "too few FLOPs per byte the transposes add to pay for them";
  return "";
}

}  // namespace

std::vector<Site> conv_channels_last_sites(const ir::Graph& g, const schedule::Schedule& s) {
  return kernel_sites(g, s, illegal, [](const std::string& kernel) {
    return "run " + kernel + "'s convolution on channels-last copies";
  });
}

StatusOr<schedule::Schedule> conv_channels_last(const ir::Graph& g, const schedule::Schedule& s, const Site& site) {
  return set_kernel_knob(g, s, site, illegal, "conv_channels_last", schedule::Knob::kChannelsLast, 1);
}

}  // namespace kforge::skills
