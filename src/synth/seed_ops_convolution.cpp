// Seed library: convolutions (nn.Conv1d/2d/3d and nn.ConvTranspose1d/2d/3d), written the KernelBench
// way: channels and kernel size as constructor arguments, the rest as keywords.
#include <numeric>

#include "synth/seed_op.h"

namespace kforge::synth {

namespace {

constexpr int64_t kMaxSampleElements = int64_t{1} << 22;

struct ConvArgs {
  int64_t out_channels = 0;
  int64_t groups = 1;
  std::vector<int64_t> kernel, stride, padding, dilation, output_padding;
  bool bias = true;
};

std::vector<int64_t> spatial(const TensorState& t) {
  return {t.dims.begin() + 1, t.dims.end()};
}

// Channels out and groups: mostly dense, sometimes grouped or depthwise.
void draw_channels(Rng& rng, int sd, int64_t in_channels, ConvArgs& a) {
  std::vector<int64_t> outs = sd == 1   ? std::vector<int64_t>{8, 16, 32, 64, 128, 256}
                              : sd == 2 ? std::vector<int64_t>{8, 16, 32, 64, 128}
                                        : std::vector<int64_t>{4, 8, 16, 32, 64};
  a.out_channels = rng.pick(outs);
  a.groups = 1;
  double r = rng.uniform01();
  if (r < 0.1 && in_channels >= 4) {  // depthwise
    a.groups = in_channels;
    a.out_channels = in_channels * rng.uniform_int(1, 2);
  } else if (r < 0.2) {
    std::vector<int64_t> gs;
    for (int64_t g : {2, 4, 8}) {
      if (in_channels % g == 0 && a.out_channels % g == 0) gs.push_back(g);
    }
    if (!gs.empty()) a.groups = rng.pick(gs);
  }
}

std::vector<int64_t> draw_kernel(Rng& rng, int sd, const std::vector<int64_t>& sizes) {
  int64_t k = rng.pick(sizes);
  std::vector<int64_t> kernel(static_cast<size_t>(sd), k);
  if (sd >= 2 && rng.chance(0.2)) kernel.back() = rng.pick(sizes);  // asymmetric
  return kernel;
}

std::string args_text(const std::vector<int64_t>& v) {
  bool same = std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; });
  return same ? std::to_string(v[0]) : seed::tuple_literal(v);
}

// Keyword arguments that differ from the default, each as a literal or a constructor argument.
std::string keywords(TaskSource& src, Rng& rng, const std::vector<std::pair<std::string, std::vector<int64_t>>>& kws,
                     const std::vector<int64_t>& defaults) {
  std::string s;
  for (size_t i = 0; i < kws.size(); ++i) {
    const auto& [key, v] = kws[i];
    if (std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == defaults[i]; })) continue;
    std::string value = args_text(v);
    if (rng.chance(0.5)) value = src.constant(key, value, true);
    s += ", " + key + "=" + value;
  }
  return s;
}

TensorState conv_output(const TensorState& in, const std::string& out_name, int64_t out_channels,
                        const std::vector<int64_t>& sp) {
  TensorState out = in;
  out.dims = {out_channels};
  out.dims.insert(out.dims.end(), sp.begin(), sp.end());
  out.names.assign(out.dims.size(), "");
  out.names[0] = out_name;
  out.domain = Domain::kReal;
  return out;
}

SeedOp conv_op(int sd) {
  SeedOp op;
  op.name = "torch.nn.Conv" + std::to_string(sd) + "d";
  op.short_name = "Conv" + std::to_string(sd) + "d";
  op.category = Category::kConvolution;
  op.registry_ops = {"conv"};
  op.starts = {{Layout::kChannels, sd + 2}};
  op.accepts = [sd](const TensorState& t) { return t.floating && t.layout == Layout::kChannels && t.rank() == sd + 2; };
  op.instantiate = [sd, name = op.short_name](const TensorState& in, Rng& rng,
                                              TaskSource& src) -> std::optional<Placed> {
    const int64_t cin = in.dims[0];
    const auto sp_in = spatial(in);
    ConvArgs a;
    draw_channels(rng, sd, cin, a);
    a.kernel = draw_kernel(rng, sd, sd == 3 ? std::vector<int64_t>{1, 3, 3, 5} : std::vector<int64_t>{1, 3, 3, 5, 7});
    int64_t s = rng.pick(std::vector<int64_t>{1, 1, 1, 2});
    int64_t dil = rng.chance(0.15) ? 2 : 1;
    bool same_pad = rng.chance(0.5);
    std::vector<int64_t> sp_out;
    for (int i = 0; i < sd; ++i) {
      const auto u = static_cast<size_t>(i);
      a.stride.push_back(s);
      a.dilation.push_back(dil);
      a.padding.push_back(same_pad ? dil * (a.kernel[u] - 1) / 2 : 0);
      int64_t o = (sp_in[u] + 2 * a.padding[u] - a.dilation[u] * (a.kernel[u] - 1) - 1) / a.stride[u] + 1;
      if (o < 2) return std::nullopt;
      sp_out.push_back(o);
    }
    TensorState probe = conv_output(in, "", a.out_channels, sp_out);
    if (probe.sample_numel() > kMaxSampleElements) return std::nullopt;
    a.bias = !rng.chance(0.2);
    std::string c_in = seed::size_arg(src, in, 1, "in_channels");
    std::string c_out = src.constant("out_channels", std::to_string(a.out_channels), true);
    std::string k = src.constant("kernel_size", args_text(a.kernel), true);
    std::string kw =
        keywords(src, rng, {{"stride", a.stride}, {"padding", a.padding}, {"dilation", a.dilation}}, {1, 0, 1});
    if (a.groups != 1)
      kw += ", groups=" + (a.groups == cin ? c_in : src.constant("groups", std::to_string(a.groups), true));
    if (!a.bias) kw += ", bias=False";
    std::string m = src.member("conv");
    src.init_line("self." + m + " = nn." + name + "(" + c_in + ", " + c_out + ", " + k + kw + ")");
    src.forward_line("x = self." + m + "(x)");
    double kvol = std::accumulate(a.kernel.begin(), a.kernel.end(), 1.0, std::multiplies<double>());
    double flops = 2.0 * static_cast<double>(probe.sample_numel()) * static_cast<double>(cin / a.groups) * kvol;
    return Placed{conv_output(in, c_out, a.out_channels, sp_out), flops};
  };
  return op;
}

SeedOp conv_transpose_op(int sd) {
  SeedOp op;
  op.name = "torch.nn.ConvTranspose" + std::to_string(sd) + "d";
  op.short_name = "ConvTranspose" + std::to_string(sd) + "d";
  op.category = Category::kConvolution;
  op.registry_ops = {"conv_transpose"};
  op.starts = {{Layout::kChannels, sd + 2}};
  op.accepts = [sd](const TensorState& t) { return t.floating && t.layout == Layout::kChannels && t.rank() == sd + 2; };
  op.instantiate = [sd, name = op.short_name](const TensorState& in, Rng& rng,
                                              TaskSource& src) -> std::optional<Placed> {
    const int64_t cin = in.dims[0];
    const auto sp_in = spatial(in);
    ConvArgs a;
    draw_channels(rng, sd, cin, a);
    if (a.groups == cin && cin > 1) a.groups = 1;  // depthwise transposed convs are rare: keep them dense
    a.kernel = draw_kernel(rng, sd, sd == 3 ? std::vector<int64_t>{2, 3, 3} : std::vector<int64_t>{2, 3, 4, 5});
    int64_t s = rng.pick(std::vector<int64_t>{1, 2, 2});
    bool pad = rng.chance(0.5);
    bool out_pad = s > 1 && rng.chance(0.3);
    std::vector<int64_t> sp_out;
    for (int i = 0; i < sd; ++i) {
      const auto u = static_cast<size_t>(i);
      a.stride.push_back(s);
      a.dilation.push_back(1);
      a.padding.push_back(pad ? (a.kernel[u] - 1) / 2 : 0);
      a.output_padding.push_back(out_pad ? 1 : 0);
      int64_t o = (sp_in[u] - 1) * s - 2 * a.padding[u] + (a.kernel[u] - 1) + a.output_padding[u] + 1;
      if (o < 2) return std::nullopt;
      sp_out.push_back(o);
    }
    TensorState probe = conv_output(in, "", a.out_channels, sp_out);
    if (probe.sample_numel() > kMaxSampleElements) return std::nullopt;
    a.bias = !rng.chance(0.2);
    std::string c_in = seed::size_arg(src, in, 1, "in_channels");
    std::string c_out = src.constant("out_channels", std::to_string(a.out_channels), true);
    std::string k = src.constant("kernel_size", args_text(a.kernel), true);
    std::string kw = keywords(
        src, rng, {{"stride", a.stride}, {"padding", a.padding}, {"output_padding", a.output_padding}}, {1, 0, 0});
    if (a.groups != 1) kw += ", groups=" + src.constant("groups", std::to_string(a.groups), true);
    if (!a.bias) kw += ", bias=False";
    std::string m = src.member("conv_transpose");
    src.init_line("self." + m + " = nn." + name + "(" + c_in + ", " + c_out + ", " + k + kw + ")");
    src.forward_line("x = self." + m + "(x)");
    double kvol = std::accumulate(a.kernel.begin(), a.kernel.end(), 1.0, std::multiplies<double>());
    double flops = 2.0 * static_cast<double>(in.sample_numel()) * static_cast<double>(a.out_channels / a.groups) * kvol;
    return Placed{conv_output(in, c_out, a.out_channels, sp_out), flops};
  };
  return op;
}

}  // namespace

void add_convolution_ops(std::vector<SeedOp>& ops) {
  for (int sd = 1; sd <= 3; ++sd) ops.push_back(conv_op(sd));
  for (int sd = 1; sd <= 3; ++sd) ops.push_back(conv_transpose_op(sd));
}

}  // namespace kforge::synth
