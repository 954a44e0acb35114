# The second batch of ops of issue #21 through the importer: each construct is imported and its graph run by
# graph_executor.py on the CPU against the model's own forward, on random inputs of several shapes.
"""Interpolation (nearest, linear, bilinear, bicubic, trilinear; scale_factor and size; align_corners), F.affine_grid
(4-D and 5-D sizes), grid_sample (bilinear and nearest, every padding mode), reflect / replicate / circular pads,
division with rounding, remainder and fmod (float and int64, negative operands), bit operations (bool and integer),
sort / argsort / topk / cummax / cummin (values and indices), scatter (tensor and scalar), scatter_add with duplicate
indices, one_hot, embedding_bag (sum / mean / max, offsets or 2-D) and F.fold. Each case names the ops its graph must
hold; ties in sorts appear only with stable=True (kforge's indices are the stable sort's)."""
import os
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

from kforge import importer  # noqa: E402
import graph_executor  # noqa: E402

OPS_DEF = os.path.join(ROOT, "src", "ir", "ops.def")

# (case, ops the graph must hold, forward body, variants: [(get_inputs() list expression, init lines)])
CASES = [
    ("interp_nearest", ["upsample_nearest"],
     "return F.interpolate(x, scale_factor=self.s, mode='nearest') * 2.0",
     [("[torch.randn(2, 3, 5, 7)]", "self.s = 2"), ("[torch.randn(1, 4, 6, 9)]", "self.s = 1.5"),
      ("[torch.randn(3, 2, 11)]", "self.s = 3"), ("[torch.randn(1, 2, 3, 4, 5)]", "self.s = 2")]),
    ("interp_nearest_size", ["upsample_nearest"],
     "return F.interpolate(x, size=self.size, mode='nearest')",
     [("[torch.randn(2, 3, 8, 8)]", "self.size = (5, 13)"), ("[torch.randn(2, 3, 7)]", "self.size = (4,)")]),
    ("interp_bilinear", ["upsample_linear"],
     "return F.interpolate(x, size=self.size, mode='bilinear', align_corners=self.ac) - x.mean()",
     [("[torch.randn(2, 3, 6, 6)]", "self.size = (13, 9); self.ac = False"),
      ("[torch.randn(2, 3, 6, 6)]", "self.size = (13, 9); self.ac = True"),
      ("[torch.randn(1, 2, 9, 12)]", "self.size = (4, 5); self.ac = False"),
      ("[torch.randn(1, 2, 1, 5)]", "self.size = (3, 1); self.ac = True")]),
    ("interp_bilinear_scale", ["upsample_linear"],
     "return nn.functional.interpolate(x, scale_factor=self.s, mode=self.mode, align_corners=False)",
     [("[torch.randn(2, 3, 5, 7)]", "self.s = 2; self.mode = 'bilinear'"),
      ("[torch.randn(2, 3, 7, 5)]", "self.s = 0.5; self.mode = 'bilinear'"),
      ("[torch.randn(2, 3, 7)]", "self.s = 2.5; self.mode = 'linear'"),
      ("[torch.randn(1, 2, 3, 4, 5)]", "self.s = 2; self.mode = 'trilinear'")]),
    ("upsample_module", ["upsample_nearest", "upsample_linear"],
     "return self.up(x) + self.bi(x)",
     [("[torch.randn(2, 3, 4, 6)]", "self.up = nn.Upsample(scale_factor=2); "
                                    "self.bi = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)")]),
    ("interp_bicubic", ["upsample_bicubic"],
     "return F.interpolate(x, size=self.size, mode='bicubic', align_corners=self.ac) - x.mean()",
     [("[torch.randn(2, 3, 6, 6)]", "self.size = (13, 9); self.ac = False"),
      ("[torch.randn(2, 3, 6, 6)]", "self.size = (13, 9); self.ac = True"),
      ("[torch.randn(1, 2, 9, 12)]", "self.size = (4, 5); self.ac = False"),
      ("[torch.randn(1, 2, 1, 5)]", "self.size = (3, 1); self.ac = True")]),
    ("interp_bicubic_scale", ["upsample_bicubic"],
     "return self.up(x) + F.interpolate(x, scale_factor=self.s, mode='bicubic')",
     [("[torch.randn(2, 3, 5, 7)]", "self.s = 2; self.up = nn.Upsample(scale_factor=2, mode='bicubic')"),
      ("[torch.randn(2, 3, 7, 5)]",
       "self.s = 1.5; self.up = nn.Upsample(scale_factor=1.5, mode='bicubic', align_corners=True)")]),
    ("grid_sample", ["grid_sample"],
     "return F.grid_sample(x, y * 2.4 - 1.2, mode=self.mode, padding_mode=self.pad, align_corners=self.ac)",
     [("[torch.randn(2, 3, 6, 7), torch.rand(2, 5, 4, 2)]", f"self.mode = {m!r}; self.pad = {p!r}; self.ac = {ac}")
      for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection") for ac in (False, True)]),
    ("affine_grid", ["cumsum", "cat", "sum"],
     "return F.affine_grid(x, self.size, align_corners=self.ac) * 2.0",
     [("[torch.randn(3, 2, 3)]", "self.size = [3, 4, 5, 7]; self.ac = False"),
      ("[torch.randn(3, 2, 3)]", "self.size = [3, 4, 5, 7]; self.ac = True"),
      ("[torch.randn(2, 2, 3)]", "self.size = [2, 1, 1, 6]; self.ac = True"),
      ("[torch.randn(2, 2, 3)]", "self.size = [2, 1, 6, 1]; self.ac = False"),
      ("[torch.randn(2, 3, 4)]", "self.size = [2, 3, 4, 5, 6]; self.ac = False")]),
    ("affine_grid_sample", ["grid_sample"],
     "theta = self.loc(x.mean(dim=(2, 3))).view(-1, 2, 3)\n"
     "grid = F.affine_grid(theta, x.shape, align_corners=self.ac)\n"
     "return F.grid_sample(x, grid, padding_mode='border', align_corners=self.ac)",
     [("[torch.randn(2, 4, 6, 5)]", f"self.loc = nn.Linear(4, 6); self.ac = {ac}") for ac in (False, True)]),
    ("pad_modes", ["reflect_pad", "replicate_pad", "circular_pad"],
     "return (F.pad(x, self.p, mode='reflect'), F.pad(x, self.p, mode='replicate'),\n"
     "        F.pad(x, self.p, mode='circular'))",
     [("[torch.randn(2, 3, 6, 7)]", "self.p = (2, 1, 3, 0)"), ("[torch.randn(2, 3, 9)]", "self.p = (4, 2)"),
      ("[torch.randn(1, 2, 4, 5, 6)]", "self.p = (1, 2, 0, 3, 2, 1)")]),
    ("rounded_division_float", ["floor_divide", "trunc_divide", "remainder", "fmod"],
     "return (torch.div(x, y, rounding_mode='floor'), torch.div(x, y, rounding_mode='trunc'), x // 0.7,\n"
     "        x % y, torch.remainder(x, -1.3), torch.fmod(x, y), 5.0 % (y + 3), torch.fmod(x, 2.5))",
     [("[torch.randn(4, 9) * 10, torch.randn(9) * 3]", ""), ("[torch.randn(3, 2, 5) * 7, torch.randn(3, 2, 5)]", "")]),
    ("rounded_division_int64", ["floor_divide", "trunc_divide", "remainder", "fmod"],
     "return (torch.div(x, y, rounding_mode='floor'), torch.div(x, y, rounding_mode='trunc'), x // 3,\n"
     "        x % y, x % 7, torch.fmod(x, y), torch.fmod(x, -4), (x * 31 + 7) % 4096, 100 // y)",
     [("[torch.randint(-50, 50, (4, 9)), torch.randint(1, 6, (9,)) * (torch.randint(0, 2, (9,)) * 2 - 1)]", ""),
      ("[torch.randint(-1000, 1000, (2, 3, 8)), torch.randint(1, 30, (2, 3, 8))]", "")]),
    ("bitwise_int", ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"],
     "return (x & y) + (x | 6) - (x ^ y) + (~x) + (3 ^ y), x.bitwise_and(12) ^ ~y",
     [("[torch.randint(-64, 64, (4, 8)), torch.randint(0, 64, (8,))]", ""),
      ("[torch.randint(-2**40, 2**40, (3, 5)), torch.randint(-9, 9, (3, 5))]", "")]),
    ("bitwise_bool", ["bitwise_xor", "logical_and", "logical_not", "logical_or"],
     "a = x > 0; b = y < 0.5\n"
     "return ((a & ~b) | (x.abs() > 1.5)).float() * x + (a ^ b).float().sum(-1, keepdim=True) + (a ^ True).float()",
     [("[torch.randn(4, 16), torch.rand(4, 16)]", ""), ("[torch.randn(2, 3, 5), torch.rand(5)]", "")]),
    ("sort", ["sort", "argsort"],
     "v, i = torch.sort(x, dim=self.d, descending=self.desc)\nreturn v * 2, i",
     [("[torch.randn(4, 9)]", "self.d = 1; self.desc = False"), ("[torch.randn(5, 3, 4)]", "self.d = 0; self.desc = True"),
      ("[torch.randn(2, 300)]", "self.d = -1; self.desc = True")]),
    ("sort_stable_ties", ["sort", "argsort"],
     "s = torch.sort(x, dim=1, descending=self.desc, stable=True)\nreturn s.values, s.indices, torch.argsort(x, dim=0)",
     [("[torch.randint(0, 4, (3, 17)).float()]", "self.desc = False"),
      ("[torch.randint(0, 3, (1, 40)).float()]", "self.desc = True")]),
    ("argsort", ["argsort"], "return torch.argsort(x, dim=self.d, descending=True), x.argsort()",
     [("[torch.randn(6, 7)]", "self.d = 0"), ("[torch.randn(2, 3, 33)]", "self.d = 2")]),
    ("topk", ["topk", "topk_indices"],
     "v, i = torch.topk(x, self.k, dim=self.d, largest=self.big)\nreturn v + 1, i",
     [("[torch.randn(4, 50)]", "self.k = 5; self.d = 1; self.big = True"),
      ("[torch.randn(6, 3, 8)]", "self.k = 2; self.d = 0; self.big = False"),
      ("[torch.randn(3, 7)]", "self.k = 7; self.d = -1; self.big = True")]),
    ("cummax_cummin", ["cummax", "cummax_indices", "cummin", "cummin_indices"],
     "a = torch.cummax(x, dim=self.d)\nb = torch.cummin(x, self.d)\nreturn a.values - b.values, a.indices, b.indices",
     [("[torch.randn(4, 30)]", "self.d = 1"), ("[torch.randn(5, 3, 4)]", "self.d = 0")]),
    ("cummax_int", ["cummax", "cummax_indices"], "v, i = x.cummax(-1)\nreturn v, i",
     [("[torch.randint(-100, 100, (3, 20))]", "")]),
    ("scatter", ["scatter", "scatter_value"],
     "idx = torch.argsort(y, dim=self.d)[self.sl]\n"
     "return x.scatter(self.d, idx, torch.tanh(x)), torch.zeros_like(x).scatter_(self.d, idx, 2.5)",
     [("[torch.randn(4, 10), torch.rand(4, 10)]", "self.d = 1; self.sl = (slice(None), slice(0, 6))"),
      ("[torch.randn(7, 3), torch.rand(7, 3)]", "self.d = 0; self.sl = (slice(0, 4), slice(None))")]),
    ("scatter_add_duplicates", ["scatter_add"],
     "return torch.zeros(x.shape[0], self.bins).scatter_add(1, y, torch.exp(x)), x.scatter_add(1, y[:, :3], x)",
     [("[torch.randn(4, 40), torch.randint(0, 8, (4, 40))]", "self.bins = 8"),
      ("[torch.randn(2, 100), torch.randint(0, 100, (2, 100))]", "self.bins = 100")]),
    ("scatter_int64", ["scatter_add", "scatter"],
     "return torch.zeros_like(x).scatter_add(0, y, x), x.scatter(0, y[:2], x[:2] * 3)",
     [("[torch.randint(-9, 9, (6, 4)), torch.randint(0, 6, (6, 4))]", "")]),
    ("one_hot", ["one_hot"],
     "return F.one_hot(y, self.c).to(x.dtype) * x, F.one_hot(y[0], num_classes=self.c)",
     [("[torch.randn(5, 11), torch.randint(0, 11, (5,))]", "self.c = 11"),
      ("[torch.randn(3, 4, 6), torch.randint(0, 6, (3, 4))]", "self.c = 6")]),
    ("embedding_bag_offsets", ["embedding_bag"],
     "return self.bag(x, y)",
     [("[torch.randint(0, 30, (20,)), torch.tensor([0, 3, 3, 9, 15])]", "self.bag = nn.EmbeddingBag(30, 8, mode='sum')"),
      ("[torch.randint(0, 30, (20,)), torch.tensor([0, 3, 3, 9, 15])]", "self.bag = nn.EmbeddingBag(30, 8, mode='mean')"),
      ("[torch.randint(0, 30, (20,)), torch.tensor([0, 1, 7, 19])]", "self.bag = nn.EmbeddingBag(30, 5, mode='max')"),
      ("[torch.randint(0, 30, (20,)), torch.tensor([0, 4, 10, 20])]",
       "self.bag = nn.EmbeddingBag(30, 6, mode='sum', include_last_offset=True)")]),
    ("embedding_bag_2d", ["embedding_bag"],
     "return F.embedding_bag(x, self.w, mode=self.mode), F.embedding_bag(x.int(), self.w, mode='sum')",
     [("[torch.randint(0, 40, (6, 5))]", "self.w = nn.Parameter(torch.randn(40, 7)); self.mode = 'mean'"),
      ("[torch.randint(0, 40, (3, 9))]", "self.w = nn.Parameter(torch.randn(40, 4)); self.mode = 'max'")]),
    ("fold", ["fold"],
     "return F.fold(x, self.out, self.k, dilation=self.dil, padding=self.pad, stride=self.st)",
     [("[torch.randn(2, 3 * 9, 64)]", "self.out = (8, 8); self.k = 3; self.dil = 1; self.pad = 1; self.st = 1"),
      ("[torch.randn(2, 2 * 4, 8)]", "self.out = (7, 9); self.k = (2, 2); self.dil = 1; self.pad = 0; self.st = (3, 2)"),
      ("[torch.randn(4 * 6, 15)]", "self.out = (9, 8); self.k = (2, 3); self.dil = (2, 1); self.pad = (1, 0); self.st = 2")]),
    ("unfold_fold_roundtrip", ["fold", "unfold"],
     "c = F.unfold(x, 3, padding=1)\nreturn F.fold(c, x.shape[-2:], 3, padding=1) / F.fold(torch.ones_like(c), x.shape[-2:], 3, padding=1)",
     [("[torch.randn(2, 3, 6, 5)]", "")]),
]


def source(body, inputs, init):
    return textwrap.dedent("""\
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
        {init}

            def forward(self, x, y=None):
        {body}


        def get_inputs():
            return {inputs}


        def get_init_inputs():
            return []
        """).format(init=textwrap.indent(init or "self.unused = None", " " * 8),
                    body=textwrap.indent(body, " " * 8), inputs=inputs)


VARIANTS = [(c[0], c[1], c[2], inputs, init, k) for c in CASES for k, (inputs, init) in enumerate(c[3])]


@pytest.mark.parametrize("name,ops,body,inputs,init,k", VARIANTS, ids=[f"{v[0]}-{v[5]}" for v in VARIANTS])
def test_graph_matches_torch(tmp_path, name, ops, body, inputs, init, k):
    path = tmp_path / f"{name}_{k}.py"
    path.write_text(source(body, inputs, init))
    g = importer.import_problem(str(path), "eval", OPS_DEF)
    importer.dumps(g)
    got = {n["op"] for n in g["nodes"]}
    assert set(ops) <= got, f"ops {set(ops) - got} missing from the graph (got {sorted(got)})"
    for seed in (0, 7, 19):
        graph_executor.check_problem(str(path), g, seed=seed, atol=1e-5, rtol=1e-5)


def test_interpolate_keeps_the_scale_torch_passes_on(tmp_path):
    """scale_factor 1.5 of 7: torch reads the source at dst / 1.5, not at dst * 7 / 10."""
    path = tmp_path / "p.py"
    path.write_text(source("return F.interpolate(x, scale_factor=1.5, mode='nearest')", "[torch.randn(1, 1, 7)]",
                           ""))
    g = importer.import_problem(str(path), "eval", OPS_DEF)
    (node,) = [n for n in g["nodes"] if n["op"] == "upsample_nearest"]
    assert node["attrs"]["scale"] == 1.5 and node["attrs"]["size"] == [10]
    graph_executor.check_problem(str(path), g)


@pytest.mark.parametrize("body,message", [
    ("return F.one_hot(y)", "num_classes"),
    ("return F.interpolate(x[0], scale_factor=2, mode='bicubic')", "bicubic takes a 4-D (N, C, H, W) input"),
    ("return F.interpolate(x, scale_factor=2, mode='bilinear', antialias=True)", "antialias=True"),
    ("return F.grid_sample(x, x[..., :2] * 0.5, mode='bicubic')",
     "mode='bicubic' not supported; use bilinear or nearest"),
    ("return F.grid_sample(x.unsqueeze(2), x.unsqueeze(-1).expand(2, 3, 4, 4, 3)[:, :, :1], align_corners=False)",
     "a 4-D (N, C, H, W) input with a (N, Ho, Wo, 2) grid is supported"),
    ("return torch.div(x, 2, rounding_mode='round')", "round"),
    ("return (x > 0).scatter_reduce(1, y, x > 0, reduce='amax')", "scatter_reduce 'amax' of a bool tensor"),
])
def test_unsupported_forms_name_what_is_missing(tmp_path, body, message):
    path = tmp_path / "p.py"
    path.write_text(source(body, "[torch.randn(2, 3, 4, 4), torch.randint(0, 3, (2, 3, 4, 4))]", ""))
    with pytest.raises(Exception) as e:
        importer.import_problem(str(path), "eval", OPS_DEF)
    assert message in str(e.value)


def test_aten_capture_of_the_new_ops(tmp_path):
    """C++ callables without an importer rule go through make_fx: their ATen ops (reflection and replication
    pads, upsample with sizes or scales, col2im) map to the same kforge ops."""
    body = ("a = torch._C._nn.reflection_pad2d(x, [1, 2, 2, 1])\n"
            "b = torch._C._nn.replication_pad1d(x[0], [2, 0])\n"
            "c = torch._C._nn.upsample_bilinear2d(x, [7, 9], True, None)\n"
            "d = torch._C._nn.upsample_nearest2d(x, None, [2.0, 2.0])\n"
            "e = torch._C._nn.col2im(F.unfold(x, 2), [5, 6], [2, 2], [1, 1], [0, 0], [1, 1])\n"
            "return a, b, c, d, e")
    path = tmp_path / "aten.py"
    path.write_text(source(body, "[torch.randn(2, 3, 5, 6)]", ""))
    g = importer.import_problem(str(path), "eval", OPS_DEF)
    assert {"reflect_pad", "replicate_pad", "upsample_linear", "upsample_nearest", "fold"} <= {n["op"] for n in g["nodes"]}
    graph_executor.check_problem(str(path), g, seed=3)


def test_aten_capture_of_bicubic_and_grid_sampler(tmp_path):
    """upsample_bicubic2d and grid_sampler_2d called as ATen ops (no importer rule of their own) map to
    upsample_bicubic and grid_sample."""
    body = ("a = torch._C._nn.upsample_bicubic2d(x, [7, 9], True, None)\n"
            "b = torch._C._nn.upsample_bicubic2d(x, None, False, [2.0, 2.0])\n"
            "c = torch.ops.aten.grid_sampler_2d(x, torch.tanh(x[:, :2].permute(0, 2, 3, 1)) * 1.1, 0, 2, False)\n"
            "d = torch.ops.aten.grid_sampler_2d(x, torch.tanh(x[:, 1:].permute(0, 2, 3, 1)) * 1.1, 1, 0, True)\n"
            "return a, b, c, d")
    path = tmp_path / "aten.py"
    path.write_text(source(body, "[torch.randn(2, 3, 5, 6)]", ""))
    g = importer.import_problem(str(path), "eval", OPS_DEF)
    ops = [n["op"] for n in g["nodes"]]
    assert ops.count("upsample_bicubic") == 2 and ops.count("grid_sample") == 2, ops
    graph_executor.check_problem(str(path), g, seed=3)
