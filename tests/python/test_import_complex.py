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
