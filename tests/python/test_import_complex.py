"""Complex tensors in forward (complex_pairs.py): each model is imported and its graph run by graph_executor.py
on the CPU against the model's own forward; the refusals say what to do instead."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

from kforge import importer  # noqa: E402
from kforge.import_ops import UserError  # noqa: E402
import graph_executor  # noqa: E402
from test_import_patterns import write_pattern  # noqa: E402

OPS_DEF = os.path.join(HERE, "..", "..", "src", "ir", "ops.def")
ZOO = os.path.join(HERE, "..", "zoo")


_problem = write_pattern


POLAR_BUFFER = ("f = torch.outer(torch.arange(8).float(), torch.rand(4) + 0.1)\n        "
                "self.register_buffer('f', torch.polar(torch.ones_like(f), f))")

CASES = {
    # rotary embeddings with the angles made in forward (no buffer)
    "rope_polar_in_forward": ("t = torch.arange(x.shape[1], device=x.device).float()\n"
                              "inv = 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8))\n"
                              "fr = torch.polar(torch.ones(x.shape[1], 4), torch.outer(t, inv))\n"
                              "z = torch.view_as_complex(x.reshape(2, 6, 4, 2))\n"
                              "return torch.view_as_real(z * fr).flatten(2)", "[torch.randn(2, 6, 8)]", ""),
    # a complex buffer, sliced and reshaped, multiplied from the right and the left
    "complex_buffer_slice_view": ("z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))\n"
                                  "f = self.f[: x.shape[1]].view(1, x.shape[1], 4)\n"
                                  "return torch.view_as_real(f * z + z * f).reshape(x.shape)",
                                  "[torch.randn(3, 5, 8)]", POLAR_BUFFER),
    # arithmetic with complex, real and Python numbers; the results made real by abs, angle, .real, .imag
    "arithmetic_mixed": ("z = torch.complex(x[:, :4], x[:, 4:])\nw = torch.view_as_complex(x.view(3, 4, 2))\n"
                         "q = (z * w - w / (z + 3.0) + 2 * z.conj() - x[:, :4] * w) / 1.5 + (1 - z) + 1j * w\n"
                         "r = torch.exp(z * 0.1).reciprocal() - (-w)\n"
                         "return torch.cat([q.abs(), q.angle(), r.real, r.imag, torch.view_as_real(q - x[:, 4:]).sum(-1)], 1)",
                         "[torch.randn(3, 8)]", ""),
    # complex matmul, sum and mean, structural ops on pairs
    "matmul_reductions_structure": ("z = torch.view_as_complex(x.view(2, 4, 4, 2))\n"
                                    "m = z @ z.transpose(1, 2) + torch.matmul(z, torch.complex(x[:, :, ::2], x[:, :, 1::2] * 0.5))\n"
                                    "a, b = m.chunk(2, dim=-1)\n"
                                    "s = torch.stack([a, b], 0).sum(0) + torch.cat([b, a], -1).mean(-1, keepdim=True)\n"
                                    "s = s.permute(0, 2, 1).contiguous()[:, 1:, :].unsqueeze(0).squeeze(0)\n"
                                    "return torch.view_as_real(s.flip(1).cumsum(2) + m.sum(dim=(1, 2), keepdim=True))",
                                    "[torch.randn(2, 4, 8)]", ""),
    # Meta's LLaMA keeps freqs_cis as a plain attribute and moves it in forward
    "complex_plain_attribute_moved_in_forward": ("self.f = self.f.to(x.device)\n"
                                                 "z = torch.view_as_complex(x.float().reshape(3, 5, 4, 2))\n"
                                                 "return torch.view_as_real(z * self.f[:5]).flatten(2).type_as(x)",
                                                 "[torch.randn(3, 5, 8)]",
                                                 POLAR_BUFFER.replace("self.register_buffer('f', ", "self.f = (")),
    # a real tensor's shape for a complex one (expand_as, view_as, reshape_as)
    "shape_from_real": ("z = torch.view_as_complex(x.view(2, 3, 2))\nw = z[:1].expand_as(x[:, :3]).reshape_as(x[:, 3:])\n"
                        "return torch.view_as_real(w.view_as(x[:, :3]) * z)", "[torch.randn(2, 6)]", ""),
    # a real tensor cast to complex, and a complex one kept complex through .to
    "casts": ("z = x[:, :3].to(torch.complex64) * torch.view_as_complex(x.view(2, 3, 2)).to(torch.complex64)\n"
              "return torch.view_as_real(z.type(torch.complex64)).float()",
              "[torch.randn(2, 6)]", ""),
    # complex einsum (an FNO spectral weight; a product with the conjugate)
    "einsum": ("z = torch.view_as_complex(x.view(2, 3, 4, 2))\nw = torch.complex(x[0, :, :4].t(), x[1, :, 4:].t())\n"
               "return torch.view_as_real(torch.einsum('bij,jk->bik', z, w) + torch.einsum('bij,bij->bi', z, z.conj())"
               ".unsqueeze(-1))", "[torch.randn(2, 3, 8)]", ""),
    # Fourier transforms (fourier.py): a spectral convolution as in Fourier neural operators (rfft2, the low modes
    # times a complex weight, irfft2 back to the input's size, norm="ortho")
    "fft_spectral_conv": ("f = torch.fft.rfft2(x, norm='ortho')\nw = torch.view_as_complex(self.w)\n"
                          "low = torch.einsum('bixy,ioxy->boxy', f[:, :, :6, :5], w)\n"
                          "return torch.fft.irfft2(low, s=x.shape[-2:], norm='ortho') + x",
                          "[torch.randn(2, 4, 16, 16)]", "self.w = nn.Parameter(torch.randn(4, 4, 6, 5, 2) * 0.1)"),
    # every kind, n / s cropping and zero-padding, dims in another order, norms, fftshift, 3 dims, float64
    "fft_kinds_sizes_norms": ("a = torch.fft.fft(x, dim=1)\nb = torch.fft.ifft(torch.fft.fft(x[0, 0], n=12), norm='forward')\n"
                              "c = torch.fft.rfftn(x, s=(7, 10), dim=(-1, 0))\nd = torch.fft.irfft(torch.fft.rfft(x[1, 2]), n=9)\n"
                              "e = torch.fft.fftshift(torch.fft.fft2(x), dim=(-2, -1))\n"
                              "g = torch.fft.ifftn(a, dim=(0, 2, 3)).real\nh = torch.fft.irfftn(torch.fft.rfftn(x.double(), dim=(1, 2)), dim=(1, 2))\n"
                              "return torch.view_as_real(a), b.abs(), c.real, c.imag, d, e.angle(), g, h.float()",
                              "[torch.randn(2, 4, 10, 16)]", ""),
    # complex factories and writes into a complex tensor (full with a complex value, a real value, another complex)
    "complex_factories_and_writes": ("z = torch.zeros(2, 5, dtype=torch.cfloat)\nz[:, 1:3] = torch.view_as_complex(x.view(2, 2, 2))\n"
                                     "w = torch.ones_like(z)\nw[0, :4] = x[1]\nf = torch.full((2, 5), 1 - 2j)\n"
                                     "return torch.view_as_real(z * w + f)",
                                     "[torch.randn(2, 4)]", ""),
    # GFNet's global filter: rfft2 over the two token dims (not the last), a complex weight, irfft2 back
    "fft_gfnet_global_filter": ("y = torch.fft.rfft2(x, dim=(1, 2), norm='ortho') * torch.view_as_complex(self.w)\n"
                                "return torch.fft.irfft2(y, s=(8, 8), dim=(1, 2), norm='ortho')",
                                "[torch.randn(2, 8, 8, 16)]", "self.w = nn.Parameter(torch.randn(8, 5, 16, 2) * 0.02)"),
    # AFNO's mixing: real einsums of the parts, softshrink, the parts stacked back into a complex tensor
    "fft_afno_mixing": ("f = torch.fft.rfft(x, dim=1, norm='ortho')\n"
                        "re = F.relu(torch.einsum('bni,io->bno', f.real, self.w[0]) - torch.einsum('bni,io->bno', f.imag, self.w[1]))\n"
                        "im = F.relu(torch.einsum('bni,io->bno', f.imag, self.w[0]) + torch.einsum('bni,io->bno', f.real, self.w[1]))\n"
                        "z = torch.view_as_complex(torch.stack([F.softshrink(re, 0.01), F.softshrink(im, 0.01)], dim=-1))\n"
                        "return torch.fft.irfft(z, n=x.shape[1], dim=1, norm='ortho') + x",
                        "[torch.randn(2, 10, 8)]", "self.w = nn.Parameter(torch.randn(2, 8, 8) * 0.1)"),
    # a real tensor times a complex number (exp(1j * phase)), and fftfreq / rfftfreq as frequency tables
    "fft_phase_and_frequencies": ("z = torch.exp(1j * x)\nf = torch.fft.rfftfreq(x.shape[-1], d=0.5)\n"
                                  "return (torch.fft.ifft(torch.fft.fft(z) * 2).real, (x * 1j).imag, "
                                  "torch.fft.irfft(torch.fft.rfft(x) * torch.exp(-f), n=x.shape[-1]), torch.fft.fftfreq(9) + x[0, 0])",
                                  "[torch.randn(2, 8)]", ""),
    # Whisper's log-mel front end: a Hann window made in forward, torch.stft, power, mel filters, log10 and clamps
    "stft_whisper_log_mel": ("window = torch.hann_window(64).to(x.device)\n"
                             "s = torch.stft(x, 64, 16, window=window, return_complex=True)\n"
                             "m = self.mel @ (s[..., :-1].abs() ** 2)\nlg = torch.clamp(m, min=1e-10).log10()\n"
                             "return (torch.maximum(lg, lg.max() - 8.0) + 4.0) / 4.0", "[torch.randn(400)]",
                             "self.register_buffer('mel', torch.rand(20, 33))"),
    # stft's options: a shorter window centred in the frame, constant padding, normalized, two-sided, not centred,
    # return_complex=False; the other window functions
    "stft_options_and_windows": ("a = torch.stft(x, 32, hop_length=8, win_length=24, window=torch.hamming_window(24), "
                                 "pad_mode='constant', normalized=True, return_complex=True)\n"
                                 "b = x.stft(16, return_complex=True, center=False, onesided=False)\n"
                                 "c = torch.stft(x, 16, window=torch.blackman_window(16, periodic=False), return_complex=False)\n"
                                 "return a.abs(), b.real, c, torch.bartlett_window(9) + x[0, 0], torch.hann_window(7, periodic=False) * 2",
                                 "[torch.randn(3, 200)]", ""),
    # an FNet-style token mixer: the real part of a 2-d transform over the sequence and the hidden dims
    "fft_fnet_mixing": ("return torch.fft.fft(torch.fft.fft(x, dim=-1), dim=-2).real + x", "[torch.randn(2, 12, 16)]", ""),
    # an irfft of a real tensor (torch reads it as a spectrum with zero imaginary parts), an integer input
    "fft_real_spectrum_int_input": ("return torch.fft.irfft(x, n=10), torch.fft.rfft((x * 4).long()).abs()",
                                    "[torch.randn(3, 6)]", ""),
}


@pytest.mark.parametrize("name", list(CASES))
def test_complex_pattern_matches_the_model(tmp_path, name):
    forward, inputs, init = CASES[name]
    path = _problem(tmp_path, forward, inputs, init)
    g = importer.import_problem(path, "eval", OPS_DEF)
    importer.dumps(g)
    assert all(n["dtype"] != "complex64" for n in g["nodes"])
    graph_executor.check_problem(path, g, atol=1e-4, rtol=1e-4)


PROBLEMS = os.path.join(HERE, "..", "problems")


@pytest.mark.parametrize("name", ["attributes_and_complex_buffers", "lstm_plain_state_attributes",
                                  "llama_plain_freqs_attribute"])
def test_plain_attribute_problem_matches_the_model(name):
    """kforge's own problems whose tensors live outside the parameters (plain attributes, complex ones)."""
    path = os.path.join(PROBLEMS, f"{name}.py")
    g = importer.import_problem(path, "eval", OPS_DEF)
    assert any(p["kind"] == "attribute" for p in g["params"])
    graph_executor.check_problem(path, g, atol=1e-4, rtol=1e-4)


def test_fourier_neural_operator_problem_matches_the_model():
    """tests/problems/fno2d_spectral_network.py, FNO's reference code: rfft2, a complex zeros tensor whose corners
    are written in place with complex einsums, irfft2."""
    path = os.path.join(PROBLEMS, "fno2d_spectral_network.py")
    g = importer.import_problem(path, "eval", OPS_DEF)
    assert {"fft_r2c", "fft_c2r", "einsum"} <= {n["op"] for n in g["nodes"]}
    graph_executor.check_problem(path, g, atol=1e-4, rtol=1e-4)


def test_llama_block_with_complex_rotary_buffer():
    path = os.path.join(ZOO, "llama_rope_complex_block.py")
    g = importer.import_problem(path, "eval", OPS_DEF)
    freqs = [p for p in g["params"] if p["path"] == "freqs_cis"]
    assert freqs == [{"id": freqs[0]["id"], "path": "freqs_cis", "kind": "buffer", "shape": [128, 16, 2],
                      "dtype": "float32", "complex": True}]
    graph_executor.check_problem(path, g, atol=1e-4, rtol=1e-4)


REFUSED = {
    "complex_output": ("return torch.view_as_complex(x.view(2, 3, 2)) * 2", "forward returns a complex tensor"),
    "complex_tanh": ("return torch.view_as_real(torch.view_as_complex(x.view(2, 3, 2)).tanh())",
                    "torch.Tensor.tanh on a complex tensor"),
    "complex_in_place": ("z = torch.view_as_complex(x.view(2, 3, 2)).clone()\nz.mul_(2)\nreturn torch.view_as_real(z)",
                         "updates a complex tensor in place"),
    "complex_to_real_cast": ("return torch.view_as_complex(x.view(2, 3, 2)).float()",
                             "torch.Tensor.float on a complex tensor"),
    "complex_cast_drops_imag": ("return torch.view_as_complex(x.view(2, 3, 2)).to(torch.float32)",
                                "drops its imaginary part"),
    "complex_real_matmul": ("z = torch.view_as_complex(x.view(2, 3, 2))\nreturn torch.view_as_real(z @ x[:, :3].t())",
                            "of a complex and a real tensor"),
    "fft_four_dims": ("return torch.fft.fftn(x.view(1, 2, 3, 2)).real", "kforge transforms 1 to 3 distinct dims per call"),
    "fft_half": ("return torch.fft.rfft(x.half().float().half().float().half()).real.float()", "take float32 and float64"),
    "fft_rfft_of_complex": ("return torch.fft.rfft(torch.fft.fft(x)).real", "rfft expects a real input"),
    "complex_into_real": ("y = x.clone()\ny[:, :3] = torch.view_as_complex(x.view(2, 3, 2))\nreturn y",
                          "writes a complex value into a real tensor"),
    "complex_real_cat": ("z = torch.view_as_complex(x.view(2, 3, 2))\nreturn torch.view_as_real(torch.cat([z, x[:, :3]], 1))",
                         "mixes complex and real floating tensors"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_complex_refusal_says_what_to_do(tmp_path, name):
    forward, message = REFUSED[name]
    path = _problem(tmp_path, forward, "[torch.randn(2, 6)]")
    with pytest.raises(UserError, match=message):
        importer.import_problem(path, "eval", OPS_DEF)


def test_complex_input_is_refused_with_the_real_view_advice(tmp_path):
    path = _problem(tmp_path, "return torch.view_as_real(x * 2)", "[torch.randn(2, 3, dtype=torch.complex64)]")
    with pytest.raises(UserError, match=r"input `x`.*view_as_real"):
        importer.import_problem(path, "eval", OPS_DEF)
