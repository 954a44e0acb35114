"""Shape inference of every registry op against torch: for each op, a tiny problem with random
small shapes is imported (torch records each node's shape) and `kforge import` re-infers every
shape in C++ and fails on any disagreement. A coverage check makes sure no op is left out."""
import json
import os
import random
import re
import subprocess
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))
OPS_DEF = os.path.join(HERE, "../../src/ir/ops.def")

rng = random.Random(20261202)


def d(lo=2, hi=7):
    return rng.randint(lo, hi)


N, C, H, W, L = d(), d(2, 4) * 2, d(5, 9), d(5, 9), d(5, 12)

# (case name, ops it must produce, forward body using x (and y, z), input shapes, extra init lines)
CASES = [
    ("unary", ["relu", "sigmoid", "tanh", "exp", "abs", "neg", "sqrt", "rsqrt", "reciprocal", "erf", "sign", "log"],
     "x = torch.relu(x); x = torch.sigmoid(x); x = torch.tanh(x); x = torch.exp(x); x = torch.abs(x); x = -x\n"
     "x = torch.sqrt(torch.abs(x)); x = torch.rsqrt(x + 1); x = torch.reciprocal(x); x = torch.erf(x); x = torch.sign(x)\n"
     "return torch.log(x + 2)", [(N, L)], ""),
    ("activations", ["leaky_relu", "gelu", "selu", "elu", "hardsigmoid", "hardswish", "hardtanh", "softplus", "softsign", "mish", "silu"],
     "x = F.leaky_relu(x, 0.2); x = F.gelu(x); x = F.gelu(x, approximate='tanh'); x = torch.selu(x); x = F.elu(x, alpha=0.5)\n"
     "x = F.hardsigmoid(x); x = F.hardswish(x); x = F.hardtanh(x, -0.5, 0.5); x = F.softplus(x, beta=2.0, threshold=10.0)\n"
     "x = F.softsign(x); x = F.mish(x); return F.silu(x)", [(N, C, L)], ""),
    ("clamp_pow_cast", ["clamp", "pow_scalar", "cast"],
     "x = torch.clamp(x, min=0.1); x = torch.clamp(x, 0.2, 0.9); x = x ** 3; x = x.double()\n"
     "return torch.nn.functional.dropout(x, p=0.0, training=True) * 1.0", [(N, L)], ""),
    ("math", ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log1p", "expm1",
              "log2", "log10", "exp2", "erfc", "erfinv", "lgamma", "floor", "ceil", "round", "trunc", "frac"],
     "s = torch.tanh(x) * 0.9\n"
     "a = torch.sin(x) + torch.cos(x) + torch.tan(s) + torch.asin(s) + torch.acos(s) + torch.atan(x) + torch.sinh(s)\n"
     "b = torch.cosh(s) + torch.asinh(x) + torch.acosh(x.abs() + 1) + torch.atanh(s) + torch.log1p(x.abs()) + torch.expm1(s)\n"
     "c = torch.log2(x.abs() + 1) + torch.log10(x.abs() + 1) + torch.exp2(s) + torch.erfc(x) + torch.erfinv(s)\n"
     "i = (x * 4).int()\n"
     "d = torch.lgamma(x.abs() + 1) + torch.floor(x) + torch.ceil(x) + torch.round(x) + torch.trunc(x) + torch.frac(x)\n"
     "return a + b + c + d, torch.floor(i), torch.round(i), torch.sin(i)", [(N, L)], ""),
    ("math_binary_classify", ["atan2", "hypot", "isnan", "isinf", "isposinf", "isneginf"],
     "y = torch.log(x)\n"
     "return (torch.atan2(x, x + 1) + torch.hypot(x, x * 2), torch.isnan(y), torch.isinf(y),\n"
     "        torch.isposinf(y), torch.isneginf(y) | torch.isfinite(y), torch.isinf((x * 4).long()))", [(N, L)], ""),
    ("identity", ["identity"], "return x", [(N, L)], ""),
    ("dropout", ["dropout"], "return F.dropout(x, p=0.3, training=True)", [(N, L)], ""),
    ("compare", ["eq", "ne", "lt", "le", "gt", "ge", "where"],
     "return (torch.where(x > 0.5, x, y) + (x < y).float() + (x <= 0.2) * 1.0 + (y >= x).double()\n"
     "        + (x == y) * 2.0 + (x != y) * 3.0)",
     [(N, L), (L,)], ""),
    ("binary", ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "where"],
     "a = x + y; b = x - 2.0; c = 1 - x; e = a * b / (c + 3); f = torch.maximum(e, y); g = torch.minimum(f, x)\n"
     "h = torch.pow(g.abs() + 1, y); return torch.where(x > 0.5, h, y)", [(N, L), (L,)], ""),
    ("reductions", ["sum", "mean", "amax", "amin", "prod", "logsumexp", "norm", "var", "argmax", "argmin"],
     "a = x.sum(dim=1); b = x.mean(dim=(0, 2), keepdim=True); c = torch.amax(x, dim=-1); e = torch.amin(x, dim=0)\n"
     "f = torch.prod(x, dim=2); g = torch.logsumexp(x, dim=1); h = torch.norm(x, p='fro'); k = torch.var(x, dim=1)\n"
     "i = torch.argmax(x, dim=1); j = torch.argmin(x)\n"
     "return a.sum() + b.sum() + c.sum() + e.sum() + f.sum() + g.sum() + h + k.sum() + i.sum() + j", [(N, C, L)], ""),
    ("max_min_dim", ["amax", "argmax", "amin"],
     "v, i = torch.max(x, dim=1); w = torch.min(x, dim=0)[0]; return v + i, w", [(N, L)], ""),
    ("softmax", ["softmax", "log_softmax"], "return torch.softmax(x, dim=1), F.log_softmax(x, dim=-1)", [(N, C, L)], ""),
    ("norms", ["batch_norm", "instance_norm", "group_norm", "layer_norm"],
     "x = self.bn(x); x = self.inorm(x); x = self.gn(x); return self.ln(x)", [(N, C, H, W)],
     "self.bn = nn.BatchNorm2d(%d); self.inorm = nn.InstanceNorm2d(%d, affine=True); self.gn = nn.GroupNorm(2, %d)\n"
     "self.ln = nn.LayerNorm([%d, %d])" % (C, C, C, H, W)),
    ("matmul_linear", ["matmul", "linear"],
     "return self.fc(torch.matmul(x, y))", [(N, C, L), (L, C)], "self.fc = nn.Linear(%d, 5)" % C),
    ("einsum", ["einsum"], "return torch.einsum('bij,jk->bik', x, y)", [(N, C, L), (L, 3)], ""),
    ("conv", ["conv"], "return self.c1(x)", [(N, C, H, W)], "self.c1 = nn.Conv2d(%d, 6, (3, 2), stride=2, padding=1, dilation=(1, 2), groups=2)" % C),
    ("conv1d_3d", ["conv"], "return self.c(x)", [(N, C, L)], "self.c = nn.Conv1d(%d, 4, 3, padding=2)" % C),
    ("conv_transpose", ["conv_transpose"], "return self.ct(x)", [(N, C, H, W)],
     "self.ct = nn.ConvTranspose2d(%d, 4, 3, stride=2, padding=1, output_padding=1, groups=2)" % C),
    ("attention", ["scaled_dot_product_attention"], "return F.scaled_dot_product_attention(x, y, z)",
     [(N, 2, L, 8), (N, 2, L + 1, 8), (N, 2, L + 1, 4)], ""),
    ("pools", ["max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool"],
     "a = F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True); b = F.avg_pool2d(x, 2, count_include_pad=False)\n"
     "c = F.adaptive_avg_pool2d(x, (2, 3)); e = F.adaptive_max_pool2d(x, 1); return a, b, c, e", [(N, C, H, W)], ""),
    ("pools_1d_3d", ["max_pool", "avg_pool"], "return F.max_pool1d(x, 2), F.avg_pool3d(x.unsqueeze(2).expand(-1, -1, 4, -1), 2)",
     [(N, C, L)], ""),
    ("scans", ["cumsum", "cumprod", "flip"], "return torch.cumsum(x.flip(1), dim=1).flip(1), torch.cumprod(x, dim=0)", [(N, L)], ""),
    ("logcumsumexp", ["logcumsumexp", "mul"], "return torch.logcumsumexp(x * 30.0, dim=1), torch.logcumsumexp(x, dim=0)", [(N, L)], ""),
    ("losses", ["cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"],
     "return (F.cross_entropy(x, z), F.mse_loss(x, y), F.l1_loss(x, y, reduction='sum'), F.smooth_l1_loss(x, y, beta=0.5),\n"
     "        F.huber_loss(x, y, reduction='none'), F.kl_div(torch.log(x), y, reduction='batchmean'))",
     [(N, L), (N, L), "torch.randint(0, %d, (%d,))" % (L, N)], ""),
    ("triplet", ["triplet_margin_loss"], "return self.loss(x, y, z)", [(N, L), (N, L), (N, L)], "self.loss = nn.TripletMarginLoss(margin=0.5)"),
    ("layout", ["reshape", "permute", "expand", "slice", "select", "cat", "stack", "diag", "tril", "triu", "full"],
     "a = x.view(-1); b = x.permute(1, 0); c = x[:, 1:4:2]; e = x.select(1, 0).unsqueeze(1).expand(-1, 3)\n"
     "f = torch.cat([c, e], dim=1); g = torch.stack([f, f], dim=0); h = torch.diag(x[0]); k = torch.tril(b) + torch.triu(b, 1)\n"
     "z0 = torch.zeros_like(x); return a, g, h, k, z0 + x", [(N, L)], ""),
    ("logical", ["logical_not", "logical_and", "logical_or", "where"],
     "m = torch.logical_and(x > 0.5, torch.logical_not(y < 0.2)); n = torch.logical_or(x > 0.7, y)\n"
     "return torch.where(torch.logical_or(m, n), x, y)", [(N, L), (L,)], ""),
    ("indexing", ["embedding", "index_select", "gather"],
     "return torch.gather(x, 1, y), torch.index_select(x, 0, z), F.embedding(z, x)",
     [(N, L), "torch.randint(0, %d, (%d, 3))" % (L, N), "torch.randint(0, %d, (5,))" % N], ""),
    ("unfold_pad", ["unfold", "constant_pad"],
     "return x.unfold(1, 3, 2), F.pad(x, (1, 2, -1, 0), value=float('-inf')), F.pad(x, (0, 1), value=0.5)",
     [(N, L)], ""),
    ("rounded_division", ["floor_divide", "trunc_divide", "remainder", "fmod"],
     "return torch.div(x, y, rounding_mode='floor'), torch.div(x, 2, rounding_mode='trunc'), x % y, torch.fmod(x, y)",
     [(N, L), (L,)], ""),
    ("bitwise", ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"],
     "return (y & 5) | (~y ^ y)", [(N, L), "torch.randint(-9, 9, (%d,))" % L], ""),
    ("pad_modes", ["reflect_pad", "replicate_pad", "circular_pad"],
     "return F.pad(x, (2, 1, 1, 0), mode='reflect'), F.pad(x, (1, 1, 0, 2), mode='replicate'), F.pad(x, (0, 2, 1, 0), mode='circular')",
     [(N, C, H, W)], ""),
    ("interpolate", ["upsample_nearest", "upsample_linear"],
     "return F.interpolate(x, scale_factor=2), F.interpolate(x, size=(%d, 3), mode='bilinear', align_corners=True)" % (H + 2),
     [(N, C, H, W)], ""),
    ("resample_grid_sample", ["upsample_bicubic", "grid_sample"],
     "return F.interpolate(x, size=(%d, 5), mode='bicubic'), F.grid_sample(x, y * 2 - 1, padding_mode='border')" % (H + 3),
     [(N, C, H, W), (N, 3, 4, 2)], ""),
    ("order", ["sort", "argsort", "topk", "topk_indices", "cummax", "cummin", "cummax_indices", "cummin_indices"],
     "s = torch.sort(x, dim=1, descending=True); t = torch.topk(x, 2, dim=0, largest=False)\n"
     "return s.values, s.indices, t.values, t.indices, torch.cummax(x, 1), torch.cummin(x, 0)", [(N, L)], ""),
    ("scatter", ["scatter", "scatter_value", "scatter_add", "one_hot"],
     "return x.scatter(1, y, x), x.scatter(1, y, 1.5), x.scatter_add(1, y, x), F.one_hot(y, %d)" % L,
     [(N, L), "torch.randint(0, %d, (%d, 3))" % (L, N)], ""),
    ("scatter_reduce", ["scatter_amax", "scatter_amin", "scatter_prod"],
     "return x.scatter_reduce(1, y, x, 'amax', include_self=False), x.scatter_reduce(0, y % 2, x, 'amin'), "
     "x.index_reduce(1, y[0], x[:, :3], 'prod')",
     [(N, L), "torch.randint(0, 3, (%d, 3))" % N], ""),
    ("fourier", ["fft_r2c", "fft_c2c", "fft_c2r"],
     "f = torch.fft.rfft2(x)\nreturn torch.fft.irfft2(f, s=(%d, %d)), torch.view_as_real(torch.fft.ifft(f, dim=1))" % (H, W + 1),
     [(N, C, H, W)], ""),
    ("special", ["digamma", "polygamma", "i0", "i0e", "i1", "i1e", "erfcx", "ndtri", "zeta"],
     "p = x.abs() + 0.5\nreturn (torch.digamma(x), torch.polygamma(2, p), torch.special.i0(x), torch.special.i0e(x), "
     "torch.special.i1(x), torch.special.i1e(x), torch.special.erfcx(x), torch.special.ndtri(torch.sigmoid(x)), "
     "torch.special.zeta(p + 1, p), torch.special.zeta(x.long() + 3, 2.0))", [(N, L)], ""),
    ("bags_fold", ["embedding_bag", "fold"],
     "return F.embedding_bag(y, x, mode='max'), F.fold(z, (%d, %d), 2)" % (H, W),
     [(N, L), "torch.randint(0, %d, (3, 4))" % N, (N, 4 * C, (H - 1) * (W - 1))], ""),
    ("recurrent", ["rnn"],
     "o, (h, c) = self.lstm(x, (y, y)); g, hg = self.gru(x.transpose(0, 1))\nreturn o, h, c, g, hg",
     [(L, N, C), (4, N, 5)],
     "self.lstm = nn.LSTM(%d, 5, num_layers=2, bidirectional=True)\n"
     "self.gru = nn.GRU(%d, 3, batch_first=True, bias=False)" % (C, C)),
]

def problem_source(body, shapes, init):
    args = ["x", "y", "z"][: len(shapes)]
    names = list(args)
    inputs = ", ".join(s if isinstance(s, str) else "torch.rand(%s)" % ", ".join(map(str, s)) for s in shapes)
    init_block = textwrap.indent(init, "        ") if init else "        self.unused = None"
    return (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n%s\n\n"
        "    def forward(self, %s):\n%s\n\n"
        "def get_inputs():\n    return [%s]\n\n"
        "def get_init_inputs():\n    return []\n"
    ) % (init_block, ", ".join(names), textwrap.indent(body, "        "), inputs)


def registry_ops():
    return re.findall(r'^KF_OP\(\w+, "([a-z0-9_]+)"', open(OPS_DEF).read(), re.M)


def import_graph(tmp_path, name, source):
    p = tmp_path / (name + ".py")
    p.write_text(source)
    out = tmp_path / (name + ".json")
    r = subprocess.run([KFORGE, "import", str(p), "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_shapes_agree_with_torch(tmp_path, case):
    name, ops, body, shapes, init = case
    source = problem_source(body, shapes, init)
    g = import_graph(tmp_path, name, source)
    got = {n["op"] for n in g["nodes"]}
    missing = set(ops) - got
    assert not missing, "ops %s not in the graph of case %s (got %s)" % (missing, name, sorted(got))


def test_every_registry_op_is_covered():
    covered = set()
    for case in CASES:
        covered.update(case[1])
    assert set(registry_ops()) - covered == set()
