"""Common constructs of real models, each a small problem imported and checked against torch on the CPU by the
graph executor (PASSING), and the constructs kforge still refuses, each with the message that names it (REFUSED).
Written as a probe of what users bring (the 12th session); a construct that starts to import moves from REFUSED to
PASSING with its check."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

from kforge import importer  # noqa: E402
import graph_executor  # noqa: E402

OPS_DEF = os.path.join(HERE, "..", "..", "src", "ir", "ops.def")

# name -> (__init__ lines, forward body, get_inputs list)
PASSING = {
    'transformer_encoder_layer': ('self.m = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)',
        'return self.m(x)',
        '[torch.randn(2, 10, 32)]'),
    'transformer_encoder_mask': ('self.m = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0, norm_first=True), 2, enable_nested_tensor=False)',
        'mask = nn.Transformer.generate_square_subsequent_mask(10)\n        return self.m(x, mask=mask, is_causal=True)',
        '[torch.randn(2, 10, 32)]'),
    'transformer_decoder': ('self.m = nn.TransformerDecoderLayer(32, 4, 64, batch_first=True, dropout=0.0)',
        'return self.m(x, x[:, :5])',
        '[torch.randn(2, 10, 32)]'),
    'mha_weights': ('self.m = nn.MultiheadAttention(32, 4, batch_first=True)',
        'o, w = self.m(x, x, x, need_weights=True)\n        return o, w',
        '[torch.randn(2, 10, 32)]'),
    'weight_norm': ('self.m = nn.utils.parametrizations.weight_norm(nn.Linear(32, 16))',
        'return self.m(x)',
        '[torch.randn(4, 32)]'),
    'spectral_norm_eval': ('self.m = nn.utils.parametrizations.spectral_norm(nn.Linear(32, 16))',
        'return self.m(x)',
        '[torch.randn(4, 32)]'),
    'pixel_shuffle': ('self.a = nn.PixelShuffle(2); self.b = nn.PixelUnshuffle(2)',
        'return self.a(x), self.b(x)',
        '[torch.randn(2, 8, 6, 6)]'),
    'channel_shuffle': ('self.m = nn.ChannelShuffle(2)',
        'return self.m(x)',
        '[torch.randn(2, 8, 6, 6)]'),
    'norms': ('self.g = nn.GroupNorm(2, 8); self.i = nn.InstanceNorm2d(8, affine=True); self.l = nn.LocalResponseNorm(3)',
        'return self.g(x), self.i(x), self.l(x), F.layer_norm(x, (6, 6))',
        '[torch.randn(2, 8, 6, 6)]'),
    'bilinear_glu_prelu': ('self.b = nn.Bilinear(8, 8, 4); self.p = nn.PReLU(8)',
        'return self.b(x, x), F.glu(x, -1), self.p(x), F.celu(x), F.rrelu(x), F.hardshrink(x), F.tanhshrink(x), F.threshold(x, 0.1, 2.0), F.logsigmoid(x), F.softmin(x, -1)',
        '[torch.randn(4, 8)]'),
    'addmm_family': ('self.w = nn.Parameter(torch.randn(8, 8))',
        'return torch.addmm(x, x, self.w), torch.baddbmm(x[None], x[None], self.w[None]), torch.addcmul(x, x, x, value=0.5), torch.addcdiv(x, x, x.abs() + 1), torch.lerp(x, x * 2, 0.3), torch.lerp(x, -x, x.sigmoid())',
        '[torch.randn(8, 8)]'),
    'embedding_padding_idx': ('self.e = nn.Embedding(10, 4, padding_idx=0)',
        'return self.e((x.abs() * 3).long().clamp(max=9))',
        '[torch.randn(3, 5)]'),
    'cumulative_misc': ('',
        'return torch.cumprod(x, 1), torch.logcumsumexp(x, 1), torch.cummin(x, 1).values, x.renorm(2, 0, 1.0), torch.nan_to_num(x.log()), torch.clamp(x, min=x[0])',
        '[torch.randn(3, 5)]'),
    'interp_modes': ('',
        "return F.interpolate(x, scale_factor=2, mode='area'), F.interpolate(x, size=(9, 9), mode='nearest-exact'), F.interpolate(x[:, :, 0], scale_factor=2, mode='linear', align_corners=True), F.interpolate(x.unsqueeze(2).expand(2, 4, 3, 6, 6), scale_factor=(1, 2, 2), mode='trilinear')",
        '[torch.randn(2, 4, 6, 6)]'),
    'conv_variants': ("self.c = nn.Conv2d(4, 8, 3, padding='same', padding_mode='reflect'); self.d = nn.Conv1d(4, 4, 3, groups=4, dilation=2); self.t = nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1); self.c3 = nn.Conv3d(4, 2, 2)",
        'return self.c(x), self.d(x[:, :, 0]), self.t(x), self.c3(x.unsqueeze(2).expand(2, 4, 3, 6, 6))',
        '[torch.randn(2, 4, 6, 6)]'),
    'rnn_cells': ('self.l = nn.LSTMCell(8, 16); self.g = nn.GRUCell(8, 16); self.r = nn.RNNCell(8, 16)',
        'h, c = self.l(x)\n        return h, c, self.g(x, h), self.r(x)',
        '[torch.randn(4, 8)]'),
    'adaptive_max_indices': ('',
        'v, i = F.adaptive_max_pool2d(x, 3, return_indices=True)\n        return v, i, F.lp_pool2d(x, 2, 2), F.max_pool1d(x[0], 2, return_indices=True)[1]',
        '[torch.randn(2, 4, 6, 6)]'),
    'sdpa_gqa': ('',
        'q = x.reshape(2, 8, 10, 4)\n        k = x.reshape(2, 8, 10, 4)[:, :2]\n        return F.scaled_dot_product_attention(q, k, k, enable_gqa=True, is_causal=True)',
        '[torch.randn(2, 10, 32)]'),
    'mha_key_padding': ('self.m = nn.MultiheadAttention(32, 4, batch_first=True)',
        'mask = torch.arange(10, device=x.device)[None, :] >= torch.tensor([7, 10], device=x.device)[:, None]\n        return self.m(x, x, x, key_padding_mask=mask, need_weights=False)[0]',
        '[torch.randn(2, 10, 32)]'),
    'matrix_norms': ('',
        "return torch.linalg.matrix_norm(x), torch.linalg.norm(x, dim=(-2, -1)), torch.linalg.matrix_norm(x, ord=1), torch.linalg.matrix_norm(x, ord=float('inf'))",
        '[torch.randn(3, 4, 4)]'),
    'gfnet_filter': ('self.w = nn.Parameter(torch.randn(8, 5, 16, 2) * 0.02)',
        "y = torch.fft.rfft2(x, dim=(1, 2), norm='ortho')\n        y = y * torch.view_as_complex(self.w)\n        return torch.fft.irfft2(y, s=(8, 8), dim=(1, 2), norm='ortho')",
        '[torch.randn(2, 8, 8, 16)]'),
    'phase_exp': ('',
        'z = torch.exp(1j * x)\n        return torch.fft.ifft(torch.fft.fft(z) * 2).real, (x * 1j).imag, torch.polar(x.abs(), x).angle()',
        '[torch.randn(2, 8)]'),
    'afno_mix': ('self.w = nn.Parameter(torch.randn(2, 8, 8) * 0.1)',
        "f = torch.fft.rfft(x, dim=1, norm='ortho')\n        re = F.relu(torch.einsum('bni,io->bno', f.real, self.w[0]) - torch.einsum('bni,io->bno', f.imag, self.w[1]))\n        im = F.relu(torch.einsum('bni,io->bno', f.imag, self.w[0]) + torch.einsum('bni,io->bno', f.real, self.w[1]))\n        z = torch.view_as_complex(torch.stack([F.softshrink(re, 0.01), F.softshrink(im, 0.01)], dim=-1))\n        return torch.fft.irfft(z, n=x.shape[1], dim=1, norm='ortho') + x",
        '[torch.randn(2, 10, 8)]'),
    'fftfreq': ('',
        'f = torch.fft.rfftfreq(x.shape[-1], d=0.5)\n        return torch.fft.irfft(torch.fft.rfft(x) * torch.exp(-f), n=x.shape[-1]), torch.fft.fftfreq(8)',
        '[torch.randn(2, 8)]'),
    'whisper_log_mel': ("self.register_buffer('mel', torch.rand(20, 33))",
        'window = torch.hann_window(64).to(x.device)\n        s = torch.stft(x, 64, 16, window=window, return_complex=True)\n        p = s[..., :-1].abs() ** 2\n        m = self.mel @ p\n        lg = torch.clamp(m, min=1e-10).log10()\n        lg = torch.maximum(lg, lg.max() - 8.0)\n        return (lg + 4.0) / 4.0',
        '[torch.randn(400)]'),
    'stft_variants': ('',
        "a = torch.stft(x, 32, hop_length=8, win_length=24, window=torch.hamming_window(24), center=True, pad_mode='constant', normalized=True, return_complex=True)\n        b = x.stft(16, return_complex=True, center=False, onesided=False)\n        c = torch.stft(x, 16, window=torch.ones(16), return_complex=False)\n        return a.abs(), b.angle(), c",
        '[torch.randn(3, 200)]'),
    'pad_sequence': ('',
        'seqs = [x[:5], x[:3], x[:7]]\n        return (nn.utils.rnn.pad_sequence(seqs, batch_first=True), nn.utils.rnn.pad_sequence(seqs, padding_value=-1.0),\n                nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_side="left"))',
        '[torch.randn(7, 4)]'),
    'split_stack_take': ('',
        'return (torch.nan_to_num(x / 0.0, posinf=1.0), x.unflatten(1, (2, 2)), torch.tensor_split(x, 3, dim=0)[1],\n                torch.vsplit(x, [2, 5])[1], torch.atleast_3d(x), torch.column_stack([x, x]), torch.dstack([x, x]),\n                torch.take_along_dim(x, x.argsort(1), 1), torch.take(x, torch.tensor([0, 5, 27])))',
        '[torch.randn(7, 4)]'),
}
REFUSED = {
    'mode_only': ('',
        'return torch.mode(x.round(), 1).values, torch.mode(x.round(), 1).indices',
        '[torch.randn(4, 9)]', 'torch.mode decomposes to aten.mode'),
    'combinations': ('',
        'return torch.combinations(x[0, :4]), torch.combinations(x[0, :4], r=3, with_replacement=True)',
        '[torch.randn(4, 9)]', 'unsupported torch callable torch.combinations'),
    'bincount_minlength': ('',
        'return torch.bincount((x.abs() * 3).long().clamp(max=9).flatten(), minlength=10)',
        '[torch.randn(3, 5)]', 'unsupported torch callable torch.bincount'),
    'packed_seq': ('self.l = nn.LSTM(8, 16, batch_first=True)',
        'p = nn.utils.rnn.pack_padded_sequence(x, [5, 3], batch_first=True)\n        o, _ = self.l(p)\n        return nn.utils.rnn.pad_packed_sequence(o, batch_first=True)[0]',
        '[torch.randn(2, 5, 8)]', 'unsupported torch callable torch._pack_padded_sequence'),
    'linalg_small': ('',
        'a = x @ x.transpose(-1, -2) + torch.eye(4)\n        return torch.linalg.det(a), torch.linalg.inv(a), torch.linalg.cholesky(a), torch.linalg.solve(a, x), torch.logdet(a), torch.linalg.slogdet(a)[1]',
        '[torch.randn(3, 4, 4)]', 'torch.linalg.det decomposes to aten._linalg_det'),
}


def write(tmp_path, name, init, body, inputs):
    path = tmp_path / f"{name}.py"
    path.write_text(f"""import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {init or 'self.unused = None'}

    def forward(self, x):
        {body}


def get_inputs():
    return {inputs}


def get_init_inputs():
    return []
""")
    return str(path)


@pytest.mark.parametrize("name", sorted(PASSING))
def test_common_construct_imports_and_matches_torch(tmp_path, name):
    path = write(tmp_path, name, *PASSING[name])
    g = importer.import_problem(path, "eval", OPS_DEF)
    graph_executor.check_problem(path, g, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_construct_names_itself(tmp_path, name):
    init, body, inputs, message = REFUSED[name]
    path = write(tmp_path, name, init, body, inputs)
    with pytest.raises(importer.UserError, match=message.replace(".", r"\.")):
        importer.import_problem(path, "eval", OPS_DEF)
