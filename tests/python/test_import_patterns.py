"""Patterns users bring, each a small model imported and checked on the CPU against torch by the graph executor
(the graph's own ops run by graph_executor.py, compared with the model's forward at 1e-4): transformer layers and
masks, RoPE, RMSNorm, weight and spectral norm parametrizations, cells in Python loops, pooling and padding
modules, indexing, integer arithmetic, norms, special functions, dtype round trips. Written as a new user's
probe of kforge's coverage (session 10): a construct that stops at import fails here with kforge's message."""
import os
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

from kforge import importer  # noqa: E402
import graph_executor  # noqa: E402

OPS_DEF = os.path.join(HERE, "..", "..", "src", "ir", "ops.def")

# name: (forward body over x (or i for an integer input), get_inputs() list, __init__ body)
CASES = {
    "rope_cat": ("x1, x2 = x[..., :16], x[..., 16:]\nrot = torch.cat([-x2, x1], dim=-1)\npos = torch.arange(x.shape[1], device=x.device).float()\ninv = 1.0 / (10000 ** (torch.arange(0, 32, 2, device=x.device).float() / 32))\nfr = torch.outer(pos, inv)\nemb = torch.cat([fr, fr], -1)\nreturn x * emb.cos() + rot * emb.sin()", "[torch.randn(2, 10, 32)]", ""),
    "rmsnorm_module": ("return self.m(x)", "[torch.randn(4, 8, 32)]", "self.m = nn.RMSNorm(32)"),
    "transformer_encoder": ("return self.m(x)", "[torch.randn(2, 10, 32)]", "self.m = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2)"),
    "transformer_decoder_mask": ("mask = nn.Transformer.generate_square_subsequent_mask(10)\nreturn self.m(x, x, tgt_mask=mask)", "[torch.randn(2, 10, 32)]", "self.m = nn.TransformerDecoderLayer(32, 4, 64, batch_first=True)"),
    "sdpa_causal_boolmask": ("q = x.view(2, 10, 4, 8).transpose(1, 2)\nm = torch.ones(10, 10, dtype=torch.bool).tril()\nreturn F.scaled_dot_product_attention(q, q, q, attn_mask=m) + F.scaled_dot_product_attention(q, q, q, is_causal=True)", "[torch.randn(2, 10, 32)]", ""),
    "embedding_padding_idx": ("return self.m(i)", "[torch.randint(0, 10, (4, 7))]", "self.m = nn.Embedding(10, 8, padding_idx=0)"),
    "trilinear_5d": ("return F.interpolate(x, scale_factor=2, mode='trilinear', align_corners=False)", "[torch.randn(1, 2, 4, 5, 6)]", ""),
    "pixel_unshuffle": ("return F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2) + x", "[torch.randn(2, 8, 5, 6)]", ""),
    "roll_rot90": ("return torch.roll(x, shifts=(1, -2), dims=(1, 2)) + torch.rot90(x, 1, (1, 2)).transpose(1, 2)", "[torch.randn(2, 6, 6)]", ""),
    "conv1d_depthwise_dilated": ("return self.m(x)", "[torch.randn(2, 8, 50)]", "self.m = nn.Conv1d(8, 8, 3, groups=8, dilation=2, padding=2)"),
    "convtranspose1d": ("return self.m(x)", "[torch.randn(2, 8, 20)]", "self.m = nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1)"),
    "bilinear": ("return self.m(x, x)", "[torch.randn(4, 8)]", "self.m = nn.Bilinear(8, 8, 5)"),
    "diff_lerp_addcmul": ("return torch.diff(x, dim=1).sum(1) + torch.lerp(x, x * 2, 0.3).mean(1) + torch.addcmul(x, x, x, value=0.5).amax(1)", "[torch.randn(4, 9)]", ""),
    "clamp_tensor_bounds": ("return torch.clamp(x, min=x.mean(0, keepdim=True), max=x.amax(0, keepdim=True) * 0.5)", "[torch.randn(4, 9)]", ""),
    "logaddexp_nanmean": ("return torch.logaddexp(x, x * 2) + torch.nanmean(x, 0) + torch.std(x, 0, unbiased=True)", "[torch.randn(4, 9)]", ""),
    "activations_misc": ("return F.softmin(x, 1) + F.hardshrink(x) + F.softshrink(x) + F.tanhshrink(x) + F.celu(x) + F.logsigmoid(x) + self.p(x)", "[torch.randn(4, 9)]", "self.p = nn.PReLU()"),
    "lp_pool": ("return F.lp_pool2d(x, 2, 2) + F.lp_pool1d(x.flatten(2), 2, 4).view(2, 3, 2, 2)", "[torch.randn(2, 3, 4, 4)]", ""),
    "masked_fill_broadcast": ("m = (x.sum(-1, keepdim=True) > 0)\nreturn x.masked_fill(m, 0.0) + torch.tril(x) + torch.triu(x, 1)", "[torch.randn(3, 5, 5)]", ""),
    "einsum_ellipsis": ("return torch.einsum('...ij,...jk->...ik', x, x) + torch.einsum('bii->bi', x).unsqueeze(-1)", "[torch.randn(3, 5, 5)]", ""),
    "cumsum_dim0_flip": ("return torch.cumsum(x, 0) + torch.flip(torch.cumprod(x, -1), [0])", "[torch.randn(4, 6)]", ""),
    "gru_cell_module": ("h = torch.zeros(4, 16)\nfor t in range(3):\n    h = self.c(x[:, t], h)\nreturn h", "[torch.randn(4, 3, 8)]", "self.c = nn.GRUCell(8, 16)"),
    "lstm_cell_module": ("h = torch.zeros(4, 16)\nc = torch.zeros(4, 16)\nfor t in range(3):\n    h, c = self.c(x[:, t], (h, c))\nreturn h + c", "[torch.randn(4, 3, 8)]", "self.c = nn.LSTMCell(8, 16)"),
    "group_norm_1d_instance": ("return self.g(x) + self.i(x)", "[torch.randn(2, 8, 10)]", "self.g = nn.GroupNorm(2, 8)\n        self.i = nn.InstanceNorm1d(8, affine=True)"),
    "multihead_kpm": ("kpm = torch.zeros(2, 10, dtype=torch.bool)\nkpm[:, 7:] = True\nreturn self.m(x, x, x, key_padding_mask=kpm, need_weights=False)[0]", "[torch.randn(2, 10, 32)]", "self.m = nn.MultiheadAttention(32, 4, batch_first=True)"),
    "upsample_bilinear_align": ("return F.interpolate(x, size=(7, 9), mode='bilinear', align_corners=True) + F.interpolate(x, scale_factor=1.5, mode='nearest-exact')[..., :7, :9]", "[torch.randn(1, 2, 5, 6)]", ""),
    "topk_scatter_reduce_sum": ("v, i = x.topk(3, dim=-1)\nreturn torch.zeros_like(x).scatter_reduce(-1, i, v, reduce='sum', include_self=False)", "[torch.randn(4, 9)]", ""),
    "argsort_stable_desc": ("return torch.argsort(x, dim=-1, descending=True, stable=True)", "[torch.randint(0, 3, (4, 9)).float()]", ""),
    "amax_multi_std_mean": ("s, m = torch.std_mean(x, dim=(1, 2))\nreturn s + m + x.amax(dim=(1, 2))", "[torch.randn(4, 3, 5)]", ""),
    "mish_hardswish_chain": ("return F.mish(x) * F.hardswish(x) + F.silu(x) / (1 + F.softplus(x, beta=2, threshold=5))", "[torch.randn(4, 9)]", ""),
    "transformer_full": ("return self.m(x, x[:, :6])", "[torch.randn(2, 10, 32)]", "self.m = nn.Transformer(32, 4, 1, 1, 64, batch_first=True)"),
    "weight_norm_conv": ("return self.c(x)", "[torch.randn(2, 4, 8, 8)]", "self.c = nn.utils.parametrizations.weight_norm(nn.Conv2d(4, 6, 3))"),
    "spectral_norm_linear": ("return self.l(x.flatten(1))", "[torch.randn(2, 4, 8, 8)]", "self.l = nn.utils.parametrizations.spectral_norm(nn.Linear(256, 6))"),
    "meshgrid_coordconv": ("ys, xs = torch.meshgrid(torch.linspace(-1, 1, x.shape[2]), torch.linspace(-1, 1, x.shape[3]), indexing='ij')\ng = torch.stack([ys, xs]).unsqueeze(0).expand(x.shape[0], -1, -1, -1)\nreturn self.c(torch.cat([x, g], 1))", "[torch.randn(2, 4, 8, 8)]", "self.c = nn.Conv2d(6, 4, 1)"),
    "baddbmm_addmm_alpha": ("return torch.baddbmm(x, x, x, beta=0.5, alpha=2.0).sum(0) + torch.addmm(x[0], x[1], x[2], beta=0.3, alpha=1.5)", "[torch.randn(3, 5, 5)]", ""),
    "max_dim_values_indices": ("v, i = torch.max(x, dim=1)\ns, j = torch.sort(x, dim=1)\nreturn v + i.float() + torch.gather(s, 1, j)[:, 0]", "[torch.randn(4, 9)]", ""),
    "repeat_interleave": ("return x.repeat_interleave(2, dim=1) + torch.repeat_interleave(x, 2, dim=1)", "[torch.randn(4, 9)]", ""),
    "heaviside_sign_nan_to_num": ("return torch.heaviside(x, torch.tensor(0.5)) + torch.sign(x) + torch.nan_to_num(x / 0.0, posinf=1.0, neginf=-1.0)", "[torch.randn(4, 9)]", ""),
    "diagonal_trace_embed": ("return torch.diagonal(x, dim1=-2, dim2=-1).sum(-1) + torch.diag_embed(x[:, 0]).sum(-1).sum(-1) + torch.trace(x[0])", "[torch.randn(3, 5, 5)]", ""),
    "cross_norms": ("return torch.cross(x[:, :3], x[:, 3:6], dim=1).sum(1) + torch.linalg.norm(x, 'fro', dim=(0, 1)) + torch.linalg.vector_norm(x, float('inf'), dim=1)", "[torch.randn(4, 9)]", ""),
    "tensordot_broadcast_matmul": ("return torch.tensordot(x, x, dims=([2], [1])).sum((0, 1, 2)) + (x @ x[0]).sum((0, 1))", "[torch.randn(3, 5, 5)]", ""),
    "avgpool_ceil_nopad": ("return F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False) + F.adaptive_max_pool2d(x, (3, 3)).mean()", "[torch.randn(2, 3, 8, 7)]", ""),
    "pads_modules": ("return self.a(x).sum() + self.b(x)[..., 1:-1, 1:-1] + self.c(x)[..., 2:-1, 1:-2]", "[torch.randn(2, 3, 8, 7)]", "self.a = nn.ZeroPad2d(1)\n        self.b = nn.ReflectionPad2d(1)\n        self.c = nn.ReplicationPad2d((1, 2, 2, 1))"),
    "half_roundtrip": ("return (x.half() * 2).float() + x.to(torch.bfloat16).float()", "[torch.randn(4, 9)]", ""),
    "int_ops": ("i = (x * 10).long()\nreturn (i // 3 + i % 3 + (i << 1) + (i >> 1) + (i & 7) + (i | 1) + i.abs()).float() + (x > 0).sum(1, keepdim=True)", "[torch.randn(4, 9)]", ""),
    "flatten_unflatten_squeeze": ("return self.u(x.flatten(1)).squeeze((0,)).transpose(-1, -2).contiguous().view(2, -1)", "[torch.randn(1, 2, 3, 4)]", "self.u = nn.Unflatten(1, (2, 12))"),
    "chunk_stack_where_scalar": ("a, b, c = x.chunk(3, dim=1)\nreturn torch.where(a > 0, b, 0.0) + torch.stack([a, b, c], 0).amax(0)", "[torch.randn(4, 9)]", ""),
    "cosine_sim_broadcast": ("return F.cosine_similarity(x.unsqueeze(1), x.unsqueeze(0), dim=-1) + torch.cdist(x, x, p=1.0)", "[torch.randn(4, 9)]", ""),
    "softmax_dtype_logsumexp_dims": ("return F.softmax(x, dim=-1, dtype=torch.float64).float() + torch.logsumexp(x, dim=(1, 2)).view(-1, 1, 1)", "[torch.randn(3, 4, 5)]", ""),
    "erfinv_special": ("return torch.special.erfinv(x.clamp(-0.9, 0.9)) + torch.special.xlogy(x.abs(), x.abs() + 1) + torch.special.ndtr(x)", "[torch.randn(4, 9)]", ""),
    "atleast_broadcast_to_expand_as": ("return torch.broadcast_to(torch.atleast_2d(x[0]), (4, 9)) + x[:1].expand_as(x)", "[torch.randn(4, 9)]", ""),
    "layernorm_2dims": ("return F.layer_norm(x, (4, 5)) + F.group_norm(x.unsqueeze(-1), 1).squeeze(-1)", "[torch.randn(3, 4, 5)]", ""),
    "cumsum_dtype_long": ("return torch.cumsum((x > 0).int(), dim=1, dtype=torch.long).float() + torch.cumsum(x, 1, dtype=torch.float64).float()", "[torch.randn(4, 9)]", ""),
    "kron_blockdiag": ("return torch.kron(x[:2, :2], x[2:, :3]).sum() + torch.block_diag(x[:2, :2], x[2:, :3]).sum(0)", "[torch.randn(4, 9)]", ""),
    "linspace_logspace_forward": ("return x * torch.linspace(0, 1, 9) + torch.logspace(0, 1, 9, base=2.0)", "[torch.randn(4, 9)]", ""),
    "plain_tensor_attributes": ("return x.masked_fill(self.mask == 0, -1e4).softmax(-1) + self.inner.scale * self.idx.float()[:9]", "[torch.randn(4, 9, 9)]", "self.mask = torch.tril(torch.ones(9, 9))\n        self.inner = nn.Module()\n        self.inner.scale = torch.linspace(0.5, 1.5, 9)\n        self.idx = torch.arange(12)"),
    "embedding_max_norm": ("return self.m(i) + F.embedding(i, self.w, max_norm=2.0, norm_type=1.0)", "[torch.randint(0, 10, (4, 7))]", "self.m = nn.Embedding(10, 8, max_norm=1.0)\n        self.w = nn.Parameter(torch.randn(10, 8))"),
    "unbind_split_sizes": ("a, b = torch.split(x, [4, 5], dim=1)\nrows = x.unbind(0)\nreturn a.sum(1) + b.mean(1) + rows[0].sum()", "[torch.randn(4, 9)]", ""),
}


def write_pattern(tmp_path, forward, inputs, init="", arg="x"):
    """A problem file whose Model has `init` as its __init__ body and `forward` over `arg`; returns its path."""
    body = textwrap.indent(forward, " " * 8)
    source = (f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
              f"class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              f"        {init or 'pass'}\n\n    def forward(self, {arg}):\n{body}\n\n\n"
              f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return []\n")
    path = tmp_path / "problem.py"
    path.write_text(source)
    return str(path)


@pytest.mark.parametrize("name", list(CASES))
def test_pattern_imports_and_matches_the_model(tmp_path, name):
    forward, inputs, init = CASES[name]
    path = write_pattern(tmp_path, forward, inputs, init, "i" if "self.m(i)" in forward else "x")
    g = importer.import_problem(path, "eval", OPS_DEF)
    importer.dumps(g)  # the JSON writer takes it (no bare inf / nan)
    graph_executor.check_problem(path, g, atol=1e-4, rtol=1e-4)
