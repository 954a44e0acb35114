# Whole networks through the importer: recurrent layers, attention, patches, in-place updates, constants.
"""Each model here is small and our own. Graphs that only use ops of the registry the importer validates
against are also run by graph_executor.py on the CPU and compared with the model's forward. Ops that
another change adds to ops.def (logical_*, unfold, embedding, index_select, gather, constant_pad) are tested
when the registry in use has them (KFORGE_OPS_DEF, else the repo's src/ir/ops.def); without them the import
must say which op kforge lacks."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

from kforge import import_ops, importer  # noqa: E402
import graph_executor  # noqa: E402

OPS_DEF = os.environ.get("KFORGE_OPS_DEF") or os.path.join(ROOT, "src", "ir", "ops.def")
SCHEMA = importer.load_schema(OPS_DEF)
NEW_OPS = ("logical_not", "logical_and", "logical_or", "unfold", "embedding", "index_select", "gather",
           "constant_pad")


def needs(*names):
    missing = [n for n in names if n not in SCHEMA]
    if missing:
        pytest.skip(f"{os.path.basename(OPS_DEF)} has no op {', '.join(missing)} yet")


def problem(tmp_path, source, name="problem.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip())
    return str(path)


def imported(path, mode="eval", ops_def=OPS_DEF):
    g = importer.import_problem(path, mode, ops_def)
    importer.dumps(g)  # the JSON writer takes it (no bare inf / nan)
    return g


def ops_of(g):
    return {n["op"] for n in g["nodes"]}


def verified(tmp_path, source, modes=("eval",), **tol):
    """Import, check the graph numerically on the CPU against the model, return the eval graph."""
    path = source if os.path.isabs(source) else problem(tmp_path, source)
    graphs = {}
    for mode in modes:
        graphs[mode] = imported(path, mode)
        graph_executor.check_problem(path, graphs[mode], **tol)
    return graphs[modes[0]]


def expect_error(path, pattern, ops_def=OPS_DEF):
    with pytest.raises(importer.UserError) as e:
        importer.import_problem(path, "eval", ops_def)
    msg = str(e.value)
    assert "\n" not in msg and re.search(pattern, msg), msg
    return msg


def line_of(path, text):
    return next(i for i, line in enumerate(open(path).read().splitlines(), 1) if text in line)


# ---------------------------------------------------------------- recurrent layers (captured as ATen graphs)

LSTM = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, input_size, hidden_size, num_layers):
            super().__init__()
            self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(hidden_size * 2, 4)

        def forward(self, x, h0, c0):
            out, (hn, cn) = self.lstm(x, (h0, c0))
            return self.fc(out[:, -1, :]), hn, cn


    def get_inputs():
        return [torch.randn(3, 5, 8), torch.randn(4, 3, 16), torch.randn(4, 3, 16)]


    def get_init_inputs():
        return [8, 16, 2]
"""


def ops_def_without(tmp_path, op):
    """An ops.def without one op: the importer then does what it did before that op existed."""
    path = tmp_path / f"ops_without_{op}.def"
    path.write_text("".join(line for line in open(OPS_DEF) if f'"{op}"' not in line))
    return str(path)


def test_lstm_two_layers_bidirectional_with_states(tmp_path):
    g = verified(tmp_path, LSTM, modes=("eval", "train"))
    assert ops_of(g) == {"rnn", "slice", "reshape", "select", "linear"}  # kept whole (python/kforge/recurrent.py)
    assert len(g["outputs"]) == 3
    # without the op `rnn`: captured as an ATen graph and decomposed, one node per step and gate
    path = problem(tmp_path, LSTM, "decomposed.py")
    g = imported(path, "eval", ops_def_without(tmp_path, "rnn"))
    graph_executor.check_problem(path, g)
    assert {"linear", "sigmoid", "tanh", "mul", "add", "stack", "cat"} <= ops_of(g)
    assert len(g["outputs"]) == 3
    assert {n["shape"][0] for n in g["nodes"] if n["id"] in g["outputs"][1:]} == {4}
    assert all(n["loc"] == "decomposed.py:12" for n in g["nodes"] if n["op"] == "sigmoid")


def test_gru_and_rnn(tmp_path):
    verified(tmp_path, """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(6, 10, num_layers=2, bidirectional=True)
                self.rnn = nn.RNN(6, 7, nonlinearity="relu", batch_first=True)
                self.tanh_rnn = nn.RNN(6, 5, num_layers=2)

            def forward(self, x, h0):
                out, hn = self.gru(x, h0)
                o2, h2 = self.rnn(x.transpose(0, 1))
                o3, h3 = self.tanh_rnn(x)
                return out, hn, o2, h2, o3, h3


        def get_inputs():
            return [torch.randn(4, 3, 6), torch.randn(4, 3, 10)]


        def get_init_inputs():
            return []
    """, modes=("eval", "train"))


def test_vanilla_rnn_cell_with_copy_and_setitem(tmp_path):
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self, n_in, n_hidden, steps):
                super().__init__()
                self.i2h = nn.Linear(n_in + n_hidden, n_hidden)
                self.register_buffer("hidden", torch.zeros(3, n_hidden))
                self.steps = steps

            def forward(self, x):
                h = self.hidden.clone()
                outs = torch.zeros(x.shape[0], self.steps, h.shape[1])
                for t in range(self.steps):
                    h.copy_(torch.tanh(self.i2h(torch.cat((x, h), dim=1))))
                    outs[:, t] = h
                    x = x * 0.5
                    x += 1.0
                last = outs[:, -1]
                last.mul_(2.0)
                outs[outs > 0.5] = 0.0
                outs[0, 1:3, 2:] = torch.ones(2, 1)
                return outs, h


        def get_inputs():
            return [torch.randn(3, 5)]


        def get_init_inputs():
            return [5, 7, 4]
    """)
    assert {"cat", "slice", "where", "linear", "tanh"} <= ops_of(g)


# ---------------------------------------------------------------- attention

def test_multihead_attention(tmp_path):
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(16, 4, batch_first=True)
                self.attn2 = nn.MultiheadAttention(16, 2)

            def forward(self, x):
                o, w = self.attn(x, x, x)
                y = x.transpose(0, 1)
                o2, _ = self.attn2(y, y, y, need_weights=False)
                return o, w, o2


        def get_inputs():
            return [torch.randn(2, 5, 16)]


        def get_init_inputs():
            return []
    """, modes=("eval", "train"))
    assert "linear" in ops_of(g) and ops_of(g) & {"softmax", "scaled_dot_product_attention"}


CAUSAL = """
    import math
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Model(nn.Module):
        def __init__(self, n_embd, n_head, max_len):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))
            self.n_head, self.n_embd = n_head, n_embd

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)


    def get_inputs():
        return [torch.randn(2, 6, 16)]


    def get_init_inputs():
        return [16, 4, 8]
"""


def test_causal_attention_masked_fill_minus_inf(tmp_path):
    g = verified(tmp_path, CAUSAL)
    fills = [n for n in g["nodes"] if n["op"] == "full" and n["attrs"]["value"] == "-inf"]
    assert len(fills) == 1 and fills[0]["loc"] == "problem.py:22"
    assert '"value": "-inf"' in importer.dumps(g)


def test_non_finite_attrs_are_strings(tmp_path):
    path = problem(tmp_path, """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, x, m):
                y = x.masked_fill(m, float('inf')) + torch.clamp(x, min=float('-inf'), max=0.5)
                return torch.where(m, float('nan'), y), torch.full_like(x, float('-inf'))


        def get_inputs():
            return [torch.rand(4, 8), torch.rand(4, 8) > 0.5]


        def get_init_inputs():
            return []
    """)
    g = imported(path)
    values = [v for n in g["nodes"] for v in n["attrs"].values() if isinstance(v, str) and v in ("inf", "-inf", "nan")]
    assert sorted(values) == ["-inf", "-inf", "inf", "nan"]
    json.loads(importer.dumps(g))
    assert importer.coerce_attr("full", "value", "scalar", False, float("nan")) == "nan"
    assert importer.coerce_attr("clamp", "min", "float", True, "-inf") == "-inf"


def test_logical_ops_on_masks(tmp_path):
    needs("logical_not", "logical_and", "logical_or")
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, x, mask):
                keep = ~mask
                both = keep & (x > 0)
                either = torch.logical_or(both, x < -0.5) | mask.logical_not()
                return x.masked_fill(~either, float('-inf')).softmax(-1), torch.logical_and(x, mask), both


        def get_inputs():
            return [torch.randn(4, 8), torch.rand(4, 8) > 0.5]


        def get_init_inputs():
            return []
    """)
    assert {"logical_not", "logical_and", "logical_or"} <= ops_of(g)


def test_bitwise_ops_on_integers_are_bit_operations(tmp_path):
    """~x of an int64 tensor is bitwise_not (the second batch of ops), not logical_not."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, x):
                return ~x


        def get_inputs():
            return [torch.randint(-5, 5, (4, 8))]


        def get_init_inputs():
            return []
    """)
    assert ops_of(g) == {"bitwise_not"}


def test_missing_op_is_named(tmp_path):
    """With a registry that lacks logical_not, the import names the op kforge does not have yet."""
    text = open(OPS_DEF).read()
    lean = tmp_path / "lean_ops.def"
    lean.write_text("\n".join(line for line in text.splitlines() if not re.match(r"KF_OP\(\w+, \"(%s)\"" % "|".join(
        NEW_OPS), line)))
    path = problem(tmp_path, CAUSAL.replace("att = F.softmax(att, dim=-1)",
                                            "att = F.softmax(att, dim=-1) * ~(self.bias[:, :, :T, :T] == 0)"))
    expect_error(path, r"problem\.py:23: torch\.Tensor\.__invert__ needs the op `logical_not`: kforge has no op "
                       r"for logical_not yet", ops_def=str(lean))


# ---------------------------------------------------------------- patches, windows, lookups

def test_vit_patches_unfold_and_item_on_constants(tmp_path):
    needs("unfold", "constant_pad")
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(3 * 4 * 4, 8)
                self.dpr = [v.item() for v in torch.linspace(0, 0.1, 3)]

            def forward(self, img):
                p = 4
                x = img.unfold(2, p, p).unfold(3, p, p).reshape(img.shape[0], -1, 3 * p * p)
                x = self.proj(x)
                scale = torch.tensor(x.shape[-1]).float().sqrt().item()
                half = int(torch.tensor(x.shape[1]) // 2)
                cols = F.unfold(img, kernel_size=3, padding=1, stride=2, dilation=2)
                return x[:, :half] / scale + self.dpr[2], cols


        def get_inputs():
            return [torch.randn(2, 3, 8, 8)]


        def get_init_inputs():
            return []
    """)
    unfolds = [n for n in g["nodes"] if n["op"] == "unfold"]
    assert unfolds[0]["attrs"] == {"dim": 2, "size": 4, "step": 4} and len(unfolds) == 4


def test_swin_style_windows_with_item(tmp_path):
    verified(tmp_path, """
        import torch
        import torch.nn as nn


        def window_partition(x, ws):
            B, H, W, C = x.shape
            x = x.view(B, H // ws, ws, W // ws, ws, C)
            return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, C)


        class Model(nn.Module):
            def __init__(self, H, ws):
                super().__init__()
                img_mask = torch.zeros((1, H, H, 1))
                cnt = 0
                for h in (slice(0, -ws), slice(-ws, None)):
                    for w in (slice(0, -ws), slice(-ws, None)):
                        img_mask[:, h, w, :] = cnt
                        cnt += 1
                self.n_regions = int(img_mask.max().item()) + 1
                self.ws = ws
                self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(2, 1, 1)))

            def forward(self, x):
                ws = int(torch.tensor(x.shape[1] * x.shape[2]).float().sqrt().item()) // 2
                windows = window_partition(x, ws)
                scale = torch.clamp(self.logit_scale, max=torch.log(torch.tensor(1. / 0.01))).exp()
                return windows * self.n_regions, scale


        def get_inputs():
            return [torch.randn(2, 8, 8, 3)]


        def get_init_inputs():
            return [8, 4]
    """)


def test_embedding_index_select_gather_pad(tmp_path):
    needs("embedding", "index_select", "gather", "constant_pad")
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(10, 6)

            def forward(self, x, idx):
                e = self.emb(idx)
                s = torch.index_select(x, 1, idx[0])
                t = torch.gather(x, 1, idx)
                p = F.pad(x, (1, 2, 0, 1), value=-1.5)
                return e, s, t, p, F.pad(x, (1, 1), value=float('-inf'))


        def get_inputs():
            return [torch.randn(4, 8), torch.randint(0, 4, (4, 3))]


        def get_init_inputs():
            return []
    """)
    assert {"embedding", "index_select", "gather", "constant_pad"} <= ops_of(g)
    pads = [n["attrs"] for n in g["nodes"] if n["op"] == "constant_pad"]
    assert pads == [{"pad": [1, 2, 0, 1], "value": -1.5}, {"pad": [1, 1], "value": "-inf"}]


def test_integer_tensor_index_is_index_select(tmp_path):
    """Swin's relative-position bias: a table indexed by a buffer of indices."""
    needs("index_select")
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = nn.Parameter(torch.randn(9, 2))
                coords = torch.stack(torch.meshgrid(torch.arange(2), torch.arange(2), indexing="ij")).flatten(1)
                rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + 1
                self.register_buffer("rpi", rel[:, :, 0] * 3 + rel[:, :, 1])

            def forward(self, x, i):
                bias = self.table[self.rpi.view(-1)].view(4, 4, -1).permute(2, 0, 1)
                return x[:, i], x[..., i[0]], bias, x[i]


        def get_inputs():
            return [torch.randn(5, 6), torch.randint(0, 5, (2, 3))]


        def get_init_inputs():
            return []
    """)
    assert [n["attrs"]["dim"] for n in g["nodes"] if n["op"] == "index_select"] == [0, 1, 1, 0]


def test_einops_rearrange(tmp_path):
    pytest.importorskip("einops")
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        from einops import rearrange, reduce


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(48, 16)

            def forward(self, img):
                x = rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=4, p2=4)
                return reduce(self.proj(x), "b n d -> b d", "mean")


        def get_inputs():
            return [torch.randn(2, 3, 8, 8)]


        def get_init_inputs():
            return []
    """)
    assert ops_of(g) <= {"reshape", "permute", "linear", "mean"}


def test_generic_capture_of_composites(tmp_path):
    """Python functions are traced into (F.glu, F.hardtanh); C++ ones without a rule are captured as ATen
    (torch.meshgrid, torch.addcmul)."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def forward(self, x, a, b):
                gx, gy = torch.meshgrid(a, b, indexing="ij")
                rows = [r * 2 for r in x]
                return F.glu(x, dim=-1), gx + gy, torch.addcmul(x, x, x, value=0.5), torch.stack(rows)


        def get_inputs():
            return [torch.randn(4, 8), torch.randn(3), torch.randn(5)]


        def get_init_inputs():
            return []
    """)
    assert {"sigmoid", "expand", "stack"} <= ops_of(g)


COMPOSITES = {
    "roll": "return torch.roll(x, (1, -3), (0, 1)) + torch.roll(x, 5).sum()",
    "repeat": "return x[None].repeat(2, 1, 3)",
    "pixel_shuffle": "return F.pixel_unshuffle(F.pixel_shuffle(x.view(1, 4, 2, 4), 2), 2)",
    "shrink_threshold": "return F.softshrink(x, 0.3) + F.hardshrink(x, 0.4) + F.threshold(x, 0.1, 20.0)",
    "celu_logsigmoid": "return F.celu(x, 0.7) + F.logsigmoid(x)",
    "lerp_prelu": "return torch.lerp(x, x * 2, 0.3), F.prelu(x.view(2, 4, 4), torch.full((4,), 0.2))",
    "arange": "return x + torch.arange(8) * 0.5 + torch.arange(1, 17, 2, dtype=torch.float32)",
    "cosine_similarity": "return F.cosine_similarity(x, x.flip(0), dim=1)",
    "std_cumsum": "return x.std(dim=1), x.flip(1).cumsum(1).flip(1)",
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_captured_composites_match_torch(tmp_path, name):
    """C++ composites without a rule, through make_fx and the ATen table, checked on the CPU."""
    verified(tmp_path, forward_problem(tmp_path, COMPOSITES[name]))


# ---------------------------------------------------------------- what stays an error, and says so

FORWARD_ONLY = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            {body}


    def get_inputs():
        return [torch.randn(4, 8)]


    def get_init_inputs():
        return []
"""


def forward_problem(tmp_path, body):
    return problem(tmp_path, FORWARD_ONLY.replace("{body}", textwrap.indent(textwrap.dedent(body), " " * 12).strip()))


def test_random_draw_in_forward(tmp_path):
    path = forward_problem(tmp_path, """
        h0 = torch.randn(4, 8)
        return self.lin(x) + h0
    """)
    expect_error(path, r"problem\.py:12: torch\.randn draws random numbers inside forward.*register_buffer.*get_inputs")


def test_unknown_aten_op_names_op_and_line(tmp_path):
    path = forward_problem(tmp_path, """
        y = torch.relu(x)
        return torch.special.bessel_j0(y)
    """)
    expect_error(path, r"^.*problem\.py:13: torch\.special\.bessel_j0 decomposes to aten\.special_bessel_j0, which kforge has no op for$")
    r = subprocess.run([sys.executable, "-m", "kforge.importer", path], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), KFORGE_OPS_DEF=OPS_DEF))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert re.match(r"kforge import: error: .*problem\.py:13: torch\.special\.bessel_j0 decomposes to aten\.special_bessel_j0", r.stderr)


def test_unknown_aten_op_inside_a_composite(tmp_path):
    path = forward_problem(tmp_path, """
        return torch.special.bessel_j0(x) + 1
    """)
    expect_error(path, r"problem\.py:12: torch\.special\.bessel_j0 decomposes to aten\.special_bessel_j0, which kforge has no op for")


def test_unused_unsupported_results_are_fine(tmp_path):
    path = forward_problem(tmp_path, """
        torch.special.bessel_j0(x)
        n = torch.arange(4)
        return self.lin(x)
    """)
    assert ops_of(imported(path)) == {"linear"}


def test_item_on_an_input_stays_an_error(tmp_path):
    expect_error(forward_problem(tmp_path, "return x * x.max().item()"),
                 r"problem\.py:12: data-dependent value: torch\.Tensor\.item")


def test_update_through_an_alias_is_an_error(tmp_path):
    path = forward_problem(tmp_path, """
        y = x.view(-1)
        x.add_(1.0)
        return y * 2
    """)
    expect_error(path, r"problem\.py:13: torch\.Tensor\.add_ updates memory in place that this tensor shares")


def test_update_of_a_disjoint_view_keeps_the_other(tmp_path):
    verified(tmp_path, forward_problem(tmp_path, """
        y = self.lin(x)
        a, b = y[:, :4], y[:, 4:]
        a.mul_(3.0)
        b.add_(a)
        return y, a, b
    """))


def test_inplace_functional_rebinding_graph(tmp_path):
    g = imported(forward_problem(tmp_path, """
        y = self.lin(x)
        y += 1.0
        y.relu_()
        return y
    """))
    assert [n["op"] for n in g["nodes"]] == ["linear", "add", "relu"]


def test_torch_math_ops_import_and_match_the_model(tmp_path):
    """torch's math beyond the activations (trig, hyperbolic, log1p, erfinv, lgamma, the roundings of float and
    int tensors, atan2, hypot, nan_to_num's isnan/isinf) imports as ops whose graph matches the model."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, i):
                s = torch.tanh(x) * 0.9
                a = torch.sin(x) + torch.cos(x) * torch.tan(s) + torch.asin(s) + torch.acos(s) + torch.atan(x)
                b = torch.sinh(s) + torch.cosh(s) + torch.asinh(x) + torch.acosh(x.abs() + 1) + torch.atanh(s)
                c = torch.log1p(x.abs()) + torch.expm1(s) + torch.log2(x.abs() + 1) + torch.log10(x.abs() + 1)
                d = torch.exp2(s) + torch.erfc(x) + torch.erfinv(s) + torch.lgamma(x.abs() + 0.5) + torch.frac(x * 3)
                r = torch.floor(x * 3) + torch.ceil(x * 3) + torch.round(x * 3) + torch.trunc(x * 3)
                l = torch.log(x)
                return (a + b + c + d + r, torch.round(i), torch.floor(i), torch.atan2(x, s) + torch.hypot(x, s),
                        torch.nan_to_num(l, nan=0.0, neginf=-5.0), torch.isposinf(x * 1e38 * 1e38))

        def get_inputs():
            return [torch.randn(8, 33), torch.randint(-50, 50, (8, 33))]

        def get_init_inputs():
            return []
    """)
    assert {"sin", "erfinv", "lgamma", "round", "atan2", "hypot", "isnan", "isposinf"} <= ops_of(g)
    # The roundings keep an integer tensor's dtype (torch.round of int64 is int64), the others give float32.
    dtypes = {(n["op"], (n["inputs"] or [None])[0]): n["dtype"] for n in g["nodes"]}
    assert dtypes[("round", "i")] == "int64" and dtypes[("floor", "i")] == "int64"


def test_a_refused_call_form_is_captured_through_aten(tmp_path):
    """torch.baddbmm's rule takes beta = alpha = 1 only; other factors go through its ATen decomposition."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, y):
                return torch.baddbmm(x, y, y.transpose(1, 2), beta=0.5, alpha=0.125)

        def get_inputs():
            return [torch.randn(4, 6, 6), torch.randn(4, 6, 5)]

        def get_init_inputs():
            return []
    """)
    assert "matmul" in ops_of(g) and "mul" in ops_of(g)


def test_statistics_pairs_and_order_statistics_import_and_match_the_model(tmp_path):
    """var_mean / std_mean (two reductions), aminmax, median and kthvalue (a stable sort and a select), rrelu in
    eval mode (leaky_relu with the mean slope)."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def forward(self, x):
                s, m = torch.std_mean(x, dim=1)
                v, m2 = torch.var_mean(x, dim=(0, 1), keepdim=True)
                lo, hi = torch.aminmax(x, dim=1)
                md = torch.median(x, dim=1)
                kv = torch.kthvalue(x, 3, dim=0, keepdim=True)
                return (s + m + lo + hi + md.values, md.indices, v + m2, kv.values, kv.indices, torch.median(x),
                        F.rrelu(x, training=False))

        def get_inputs():
            return [torch.randn(16, 33)]

        def get_init_inputs():
            return []
    """)
    assert {"var", "mean", "amin", "amax", "sort", "argsort", "select", "leaky_relu"} <= ops_of(g)


def test_small_constant_lists_made_in_forward_import_and_match_the_model(tmp_path):
    """torch.tensor([...]) of up to 32 numbers inside forward (normalisation constants, class weights) becomes a
    `full` per number, concatenated and reshaped; a longer one asks for a buffer."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                mean = torch.tensor([0.485, 0.456, 0.406], device=x.device).view(1, 3, 1, 1)
                std = torch.tensor([[0.229], [0.224], [0.225]], device=x.device).view(1, 3, 1, 1)
                w = torch.tensor([1, -2, 3], device=x.device)
                return (x - mean) / std * w.view(1, 3, 1, 1), x.new_tensor([[1.0, 2.0], [3.0, 4.0]]).sum()

        def get_inputs():
            return [torch.rand(2, 3, 8, 8)]

        def get_init_inputs():
            return []
    """)
    assert {"full", "cat", "reshape"} <= ops_of(g)
    path = problem(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return x * torch.tensor(list(range(40)), device=x.device)

        def get_inputs():
            return [torch.rand(2, 40)]

        def get_init_inputs():
            return []
    """, "long_constant.py")
    expect_error(path, r"torch.tensor of 40 numbers inside forward \(at most 32\).*register_buffer")


def test_cdist_imports_as_differences_and_a_norm(tmp_path):
    """torch.cdist for p = 2, 1 and inf, batched and not: a broadcast sub and a norm over the features."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, y):
                return torch.cdist(x, y), torch.cdist(x, y, p=1.0), torch.cdist(x[0], y[0], p=float("inf"))

        def get_inputs():
            return [torch.randn(2, 30, 8), torch.randn(2, 27, 8)]

        def get_init_inputs():
            return []
    """, atol=1e-4, rtol=1e-4)
    assert {"sub", "norm"} <= ops_of(g)


def test_any_all_isin_bucketize_searchsorted_quantile_import_and_match_the_model(tmp_path):
    """torch.any / torch.all (over dims and over everything; NaN is nonzero), isin (torch decomposes it to any),
    bucketize and searchsorted (left and right, int32 out, a batched sorted sequence, NaN values sorted last),
    quantile (a sort, its NaN check through any): counts and compares of ops kforge has."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("edges", torch.linspace(-2, 2, 9))

            def forward(self, x, seq):
                a = torch.any(x > 1.5, dim=1).float() + torch.all(x > -3.0, dim=-1).float()
                whole = torch.any(torch.isnan(x)) | torch.all(x == x, dim=(0, 1), keepdim=True)
                hits = torch.isin(torch.round(x * 2), self.edges)
                left = torch.bucketize(x, self.edges)
                right = torch.bucketize(x, self.edges, right=True, out_int32=True)
                found = torch.searchsorted(seq, x[:, :8].contiguous(), side="right")
                q = torch.quantile(x, 0.25, dim=1)
                return a, whole, hits, left, right, found, q

        def get_inputs():
            x = torch.randn(16, 64)
            x[3, 5] = float("nan")
            x[7, 0] = 1.0
            seq = torch.sort(torch.randn(16, 12), dim=1).values
            return [x, seq]

        def get_init_inputs():
            return []
    """)
    assert {"sum", "ne", "eq", "gt", "ge", "isnan", "where", "sort"} <= ops_of(g)


def test_histc_and_copysign_import_and_match_the_model(tmp_path):
    """torch.histc with a given range (values outside it, on its edges, NaN) and with the data's own range (and a
    constant tensor, whose range torch widens by 1), as a scatter_add of ones; torch.copysign with -0.0, zeros
    and a scalar sign, as abs, neg and where."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, y):
                given = torch.histc(x, bins=10, min=-1.5, max=1.5)
                own = torch.histc(x[4:], bins=7)
                flat = torch.histc(torch.zeros_like(y) + 2.0, bins=5)
                signs = torch.copysign(x, y)
                scalar = torch.copysign(x, -0.0) + torch.copysign(y, 2.0)
                return given, own, flat, signs, scalar

        def get_inputs():
            x = torch.randn(16, 64)
            x[0, :5] = torch.tensor([-1.5, 1.5, 0.0, float("nan"), 3.0])
            y = torch.randn(16, 64)
            y[1, :4] = torch.tensor([0.0, -0.0, float("-inf"), float("inf")])
            return [x, y]

        def get_init_inputs():
            return []
    """, atol=0, rtol=0)
    assert {"scatter_add", "amin", "amax", "where", "abs", "neg"} <= ops_of(g)


def test_advanced_indexing_and_tril_indices_import_and_match_the_model(tmp_path):
    """Integer index tensors in any of torch's advanced-indexing forms: two broadcast together (DLRM's pairwise
    interactions through tril_indices / triu_indices), negative indices, an int among them, separated by a slice
    (the index dims go first), after a sliced dim, int32 indices, a 2-d index beside an Ellipsis; F.pdist as cdist's
    differences and the upper triangle's entries."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("rows", torch.tensor([0, 3, -1, 2]))
                self.register_buffer("cols", torch.tensor([[1], [4], [-2]]))
                self.register_buffer("small", torch.tensor([2, 0, 1], dtype=torch.int32))

            def forward(self, z, x):
                li, lj = torch.tril_indices(6, 6, offset=-1)
                ui, uj = torch.triu_indices(5, 7, offset=2)
                pairs = z[:, li, lj]
                upper = x[:, ui, uj]
                grid = x[:, self.cols, self.rows]
                mixed = x[1, self.rows, 2:5]
                apart = x[self.small, 1:4, self.rows[:3]]
                sliced = x[:, 1:, self.small]
                tail = z[..., self.cols]
                dists = F.pdist(x[0], p=2.0) + F.pdist(x[1, :3], p=1.0).sum()
                return pairs, upper, grid, mixed, apart, sliced, tail, dists

        def get_inputs():
            return [torch.randn(8, 6, 6), torch.randn(4, 5, 7)]

        def get_init_inputs():
            return []
    """, atol=1e-6, rtol=1e-6)
    assert {"index_select", "scatter", "where", "norm"} <= ops_of(g)


def test_writes_through_index_tensors_import_and_match_the_model(tmp_path):
    """x[idx] = v (torch's index_put): rows by a 1-d index with a broadcast value, negative entries, a number;
    two index tensors with an int among them; index tensors separated by a full slice; an int32 index; a value of
    another dtype (cast). Each as a scatter of the linear index into x's indexed dims merged into one."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("rows", torch.tensor([0, 5, -2]))
                self.register_buffer("cols", torch.tensor([1, 3, 6, 2], dtype=torch.int32))

            def forward(self, x, v, w):
                a = x.clone()
                a[self.rows] = v
                b = x.clone()
                b[self.rows, 2] = -1.5
                c = x.clone()
                c[self.rows[:2], :, ] = w[:2]
                d = x.clone().reshape(4, 2, 7)
                d[self.cols[:2], :, self.cols[2:]] = 7
                e = torch.zeros(8, 7, dtype=torch.int64)
                e[:, self.cols] = self.rows[:1]
                return a, b, c, d, e

        def get_inputs():
            return [torch.randn(8, 7), torch.randn(7), torch.randn(3, 7)]

        def get_init_inputs():
            return []
    """, atol=0, rtol=0)
    assert "scatter" in ops_of(g)


def test_index_put_add_copy_fill_import_and_match_the_model(tmp_path):
    """Tensor.index_put_ (accumulate or not), index_add (repeated indices add up; alpha), index_copy, index_fill
    along a middle dim: ATen's index ops through the same linear index as x[idx] (scatter, scatter_add)."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("idx", torch.tensor([4, 0, 4, 2]))
                self.register_buffer("once", torch.tensor([3, 1]))

            def forward(self, x, src, v):
                a = x.clone().index_put_((self.idx,), v, accumulate=True)
                b = x.clone().index_put_((self.once, self.once), torch.tensor(2.5))
                c = x.index_add(1, self.idx, src, alpha=0.5)
                d = x.index_copy(1, self.once, src[:, :2])
                e = x.index_fill(1, self.once, -3.0)
                return a, b, c, d, e

        def get_inputs():
            return [torch.randint(-4, 4, (6, 5, 3)).float(), torch.randint(-4, 4, (6, 4, 3)).float(),
                    torch.randint(-4, 4, (5, 3)).float()]

        def get_init_inputs():
            return []
    """, atol=0, rtol=0)
    assert {"scatter", "scatter_add"} <= ops_of(g)


def test_max_pool_indices_and_max_unpool_import_and_match_the_model(tmp_path):
    """SegNet's encoder-decoder pair: nn.MaxPool2d(return_indices=True) (with padding and a stride other than the
    window, a 3-d input, ties in integer-valued data: the first maximum) and nn.MaxUnpool2d (with and without
    output_size) through argmax over unfold windows and a scatter."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = nn.MaxPool2d(2, stride=2, return_indices=True)
                self.unpool = nn.MaxUnpool2d(2, stride=2)
                self.conv = nn.Conv2d(3, 3, 3, padding=1)

            def forward(self, x, ties):
                y, idx = self.pool(self.conv(x))
                back = self.unpool(torch.relu(y), idx, output_size=x.shape[-2:])
                v, j = F.max_pool2d(ties, 3, stride=2, padding=1, return_indices=True)
                w, i3 = F.max_pool2d(ties[0], (2, 3), return_indices=True)
                return back, v, j, F.max_unpool2d(v, j, 3, stride=2, padding=1), w, i3

        def get_inputs():
            return [torch.randn(2, 3, 16, 12), torch.randint(-2, 3, (2, 4, 9, 11)).float()]

        def get_init_inputs():
            return []
    """, atol=1e-6, rtol=1e-6)
    assert {"max_pool", "argmax", "scatter", "unfold"} <= ops_of(g)


def test_nearest_exact_and_bilinear_import_and_match_the_model(tmp_path):
    """F.interpolate(mode='nearest-exact') up and down, by size and by (non-integer) scale_factor, of 3-d, 4-d and
    5-d inputs, as index_selects of torch's source index (exact); nn.Bilinear with and without bias, with a batch
    of sequences, as two einsums."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.bi = nn.Bilinear(8, 6, 5)
                self.nobias = nn.Bilinear(8, 6, 3, bias=False)

            def forward(self, x, v, a, b):
                up = F.interpolate(x, size=(11, 7), mode="nearest-exact")
                down = F.interpolate(x, scale_factor=0.37, mode="nearest-exact")
                odd = F.interpolate(x, scale_factor=(1.7, 2.5), mode="nearest-exact")
                line = F.interpolate(v[:, :, 0], scale_factor=1.3, mode="nearest-exact")
                cube = F.interpolate(v, size=(3, 9, 4), mode="nearest-exact")
                return up, down, odd, line, cube, self.bi(a, b), self.nobias(a[0], b[0])

        def get_inputs():
            return [torch.randn(2, 3, 9, 13), torch.randn(2, 2, 5, 6, 7), torch.randn(4, 10, 8), torch.randn(4, 10, 6)]

        def get_init_inputs():
            return []
    """, atol=1e-5, rtol=1e-5)
    assert {"index_select", "einsum"} <= ops_of(g)


def test_scatter_reduce_sum_mean_import_and_match_the_model(tmp_path):
    """Tensor.scatter_reduce 'sum' and 'mean', with and without self (positions nothing lands on keep their value),
    and the legacy scatter_(reduce='add'), from scatter_add; integer-valued data so that any summation order is
    exact."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, src, idx):
                return (x.scatter_reduce(1, idx, src, reduce="sum"),
                        x.scatter_reduce(1, idx, src, reduce="sum", include_self=False),
                        x.scatter_reduce(1, idx, src, reduce="mean"),
                        x.scatter_reduce(1, idx, src, reduce="mean", include_self=False),
                        x.clone().scatter_(1, idx, src, reduce="add"))

        def get_inputs():
            return [torch.randint(-8, 8, (6, 10)).float(), torch.randint(-8, 8, (6, 7)).float(),
                    torch.randint(0, 10, (6, 7))]

        def get_init_inputs():
            return []
    """, atol=0, rtol=0)
    assert {"scatter_add", "scatter_value", "div"} <= ops_of(g)


def test_scatter_reduce_max_min_prod_and_index_reduce_match_the_model(tmp_path):
    """scatter_reduce 'amax', 'amin' and 'prod' with and without self (include_self=False writes the identity
    first: -inf / +inf / 1, the int64 extremes for integers), index_reduce along a middle dim (an int32 index,
    cast), the legacy scatter_(reduce='multiply') of a tensor and of a number, and a graph-network max
    aggregation (messages of edges onto their target nodes); small integer values so products stay exact."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, src, idx, feats, edges, big):
                return (x.scatter_reduce(1, idx, src, reduce="amax"),
                        x.scatter_reduce(1, idx, src, reduce="amin", include_self=False),
                        x.scatter_reduce(1, idx, src, reduce="prod"),
                        x.scatter_reduce(1, idx, src, reduce="prod", include_self=False),
                        x.clone().scatter_(1, idx, src, reduce="multiply"),
                        x.scatter(1, idx, 2.0, reduce="multiply"),
                        big.scatter_reduce(1, idx, big[:, :7] * 3, reduce="amax", include_self=False),
                        big.scatter_reduce(1, idx, big[:, :7] - 5, reduce="amin", include_self=False),
                        feats.index_reduce(1, edges[0].int(), feats[:, :5] * 2, "amax", include_self=False),
                        feats.index_reduce(1, edges[1], feats[:, 2:7], "mean"),
                        torch.zeros(6, 10).scatter_reduce(0, edges[1].unsqueeze(1).expand(5, 10),
                                                          x[:5] * 0.5, reduce="amax", include_self=False))

        def get_inputs():
            return [torch.randint(-3, 4, (6, 10)).float(), torch.randint(-3, 4, (6, 7)).float(),
                    torch.randint(0, 10, (6, 7)), torch.randint(-8, 8, (4, 9, 3)).float(),
                    torch.randint(0, 6, (2, 5)), torch.randint(-10**6, 10**6, (6, 10))]

        def get_init_inputs():
            return []
    """, atol=0, rtol=0)
    assert {"scatter_amax", "scatter_amin", "scatter_prod", "scatter_value"} <= ops_of(g)


def test_graph_sage_problem_matches_the_model(tmp_path):
    """tests/problems/graph_sage_max_mean.py: max and mean aggregation of edge messages onto nodes."""
    g = verified(tmp_path, os.path.join(HERE, "..", "problems", "graph_sage_max_mean.py"), atol=1e-4, rtol=1e-4)
    assert {"scatter_amax", "scatter_value", "scatter_add", "div"} <= ops_of(g)


def test_diagonal_scatter_and_fill_diagonal_match_the_model(tmp_path):
    """torch.diagonal_scatter with offsets of both signs and dims not last (a permute there and back);
    fill_diagonal_ in place (of a clone, of a product, a tall matrix with wrap=True, a cube)."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, s):
                a = torch.diagonal_scatter(x, s[:, :5], 1, 1, 2)
                b = torch.diagonal_scatter(x, s[:, :4] * 2, -2, 2, 1)
                c = torch.diagonal_scatter(x[0], s[0, :5], 0)
                z = x[1].clone().fill_diagonal_(3.0)
                y = x[1] * 1
                y.fill_diagonal_(-2.0)
                tall = s.reshape(7, 2).repeat(2, 1).fill_diagonal_(4.0, wrap=True)
                cube = (x[0, :3, :3].unsqueeze(0).expand(3, 3, 3) * 1).fill_diagonal_(7.0)
                return a, b, c, z, y, tall, cube

        def get_inputs():
            return [torch.randn(2, 5, 6), torch.randn(2, 7)]

        def get_init_inputs():
            return []
    """, atol=0, rtol=0)
    assert "scatter" in ops_of(g)


def test_in_place_writes_through_diagonal_views_match_the_model(tmp_path):
    """Writes through x.diagonal() views reach their base (diagonal_write_plan): a covariance's diagonal plus eps,
    fill_ and copy_ of off-diagonals, and a view read again after its own in-place update."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, s):
                cov = x @ x.transpose(-1, -2) / x.shape[-1]
                cov.diagonal(dim1=-2, dim2=-1).add_(1e-3)
                y = x[0, :, :5].clone()
                y.diagonal(1).fill_(2.0)
                z = torch.zeros(4, 6)
                torch.diagonal(z, -1).copy_(s[:3])
                w = x[1, :, :5] * 1
                d = w.diagonal()
                d.mul_(3)
                return cov, y, z, w + d.sum()

        def get_inputs():
            return [torch.randn(2, 5, 8), torch.randn(7)]

        def get_init_inputs():
            return []
    """, atol=1e-5, rtol=1e-5)
    assert "scatter" in ops_of(g)


def test_an_in_place_aten_update_kforge_cannot_follow_is_refused_not_dropped(tmp_path, monkeypatch):
    """A C++ callable whose ATen graph writes into a view kforge has no op for (fill_diagonal_ without its rule:
    aten.as_strided, then fill_ on it) used to leave the caller's tensor at its old value, a wrong answer; the
    tensor sharing the written memory is now an error to use, naming the ATen op."""
    monkeypatch.delitem(import_ops.RULES, torch.Tensor.fill_diagonal_)
    path = problem(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                y = x * 2
                y.fill_diagonal_(3.0)
                return y

        def get_inputs():
            return [torch.randn(5, 6)]

        def get_init_inputs():
            return []
    """)
    expect_error(path, r"problem.py:7: torch.Tensor.fill_diagonal_ decomposes to aten.as_strided, which kforge has no op")


def test_adaptive_max_pool_indices_match_the_model(tmp_path):
    """F.adaptive_max_pool2d(return_indices=True) where the plane is a multiple of the output (a max pool's windows),
    read by max_unpool2d; where it is not, reading the indices is refused, naming the ATen op."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def forward(self, x):
                v, i = F.adaptive_max_pool2d(x, (3, 4), return_indices=True)
                return v, i, F.max_unpool2d(v * 2, i, 2, output_size=x.shape[-2:])

        def get_inputs():
            return [torch.randn(2, 3, 6, 8)]

        def get_init_inputs():
            return []
    """, atol=0, rtol=0)
    assert "argmax" in ops_of(g)
    path = forward_problem(tmp_path, """
        v, i = F.adaptive_max_pool2d(x.reshape(1, 4, 2, 4).repeat(1, 1, 4, 2)[:, :, :7, :7], 3, return_indices=True)
        return v, i
    """)
    expect_error(path, r"adaptive_max_pool2d, whose output 1 kforge has no op for")


def test_diagonal_norms_and_shifts_import_and_match_the_model(tmp_path):
    """torch.diagonal (offsets of both signs, dims not last, a wide matrix), torch.trace, diag_embed's sum; vector
    norms of order inf, -inf and 0 (abs with amax / amin; a count of nonzeros), F.normalize by them; << and >> of
    int64 by numbers (negative values: the right shift rounds toward -inf)."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def forward(self, x, w, i):
                return (torch.diagonal(x, dim1=-2, dim2=-1), torch.diagonal(x, 1, 0, 2), torch.diagonal(w, -2),
                        torch.diagonal(w, 3), torch.trace(w[:, :5]), torch.diag_embed(x[:, 0]).sum(-1),
                        torch.linalg.vector_norm(x, float("inf"), dim=1), torch.linalg.vector_norm(x, -float("inf")),
                        torch.linalg.vector_norm(x * (x > 0), 0, dim=(0, 2)), i << 3, i >> 2, (i >> 1) << 1,
                        F.normalize(w, p=float("inf"), dim=1), F.normalize(x, dim=-1), torch.norm(w, p=0))

        def get_inputs():
            return [torch.randn(3, 5, 5), torch.randn(5, 7), torch.randint(-100, 100, (4, 6))]

        def get_init_inputs():
            return []
    """, atol=0, rtol=0)
    assert {"slice", "abs", "amax", "amin", "floor_divide"} <= ops_of(g)


def test_fmax_signbit_scatters_and_masked_scatter_import_and_match_the_model(tmp_path):
    """torch.fmax / fmin (a NaN operand ignored), signbit (-0.0 included), slice_scatter and select_scatter (the
    importer's write plan), masked_scatter (a running count of the mask indexes the source); integer clamps."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x, y):
                i = (x * 10).long()
                return (torch.fmax(x, y), torch.fmin(x, y), torch.signbit(y), torch.signbit(i),
                        torch.slice_scatter(x, y[:, 1:4] * 2, 1, 1, 4), torch.select_scatter(x, y[0], 0, 2),
                        x.masked_scatter(x > 0, y * 10), x.masked_scatter((y > 0)[0], x.flip(0)),
                        i.clamp(-3, 3), i.clamp(max=2))

        def get_inputs():
            x, y = torch.randn(4, 9), torch.randn(4, 9)
            x[0, 0], y[0, 1], x[1, 2], y[1, 2], y[2, 0] = float("nan"), float("nan"), float("nan"), float("nan"), -0.0
            return [x, y]

        def get_init_inputs():
            return []
    """, atol=0, rtol=0)
    assert {"maximum", "isnan", "cumsum", "index_select"} <= ops_of(g)


def test_error_value_dependent_shape_says_how_to_keep_the_shape(tmp_path):
    path = problem(tmp_path, """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                return torch.stack(torch.where(x > 0), 0).sum()

        def get_inputs():
            return [torch.randn(4, 9)]

        def get_init_inputs():
            return []
    """)
    with pytest.raises(importer.UserError, match=r"torch\.where: its result's shape depends on the tensor's values"):
        imported(path)


def test_gaussian_nll_loss_imports_and_matches_the_model(tmp_path):
    """F.gaussian_nll_loss (its negative-variance check is data-dependent Python, so it has a rule): the
    variance clamped at eps, full's constant, one variance per row, and the three reductions."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def forward(self, mu, y, var, row_var):
                return (F.gaussian_nll_loss(mu, y, var),
                        F.gaussian_nll_loss(mu, y, row_var, full=True, reduction="sum"),
                        F.gaussian_nll_loss(mu, y, var * 0.0, eps=1e-3, reduction="none"))

        def get_inputs():
            return [torch.randn(32, 10), torch.randn(32, 10), torch.rand(32, 10) + 0.05, torch.rand(32) + 0.05]

        def get_init_inputs():
            return []
    """)
    assert {"clamp", "log", "div", "mean", "sum"} <= ops_of(g)


def test_cosine_embedding_loss_imports_and_matches_the_model(tmp_path):
    """F.cosine_embedding_loss (a C++ callable with no ATen capture torch could trace): torch's formula with its
    1e-12 terms, a margin, targets of 1 and -1, the three reductions, and 1-d inputs."""
    g = verified(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def forward(self, a, b, y):
                return (F.cosine_embedding_loss(a, b, y),
                        F.cosine_embedding_loss(a, b, y, margin=0.2, reduction="sum"),
                        F.cosine_embedding_loss(a, -b, y, margin=-0.1, reduction="none"),
                        F.cosine_embedding_loss(a[0], b[0], y[0]))

        def get_inputs():
            return [torch.randn(32, 24), torch.randn(32, 24), torch.randint(0, 2, (32,)) * 2 - 1]

        def get_init_inputs():
            return []
    """)
    assert {"sum", "sqrt", "div", "where", "clamp"} <= ops_of(g)
