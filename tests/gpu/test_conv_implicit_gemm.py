"""GPU tests of the conv_implicit_gemm skill (ctest label gpu, skipped without a GPU): float32 2-d convs with
a small reduction (C_in * kh * kw <= 160) run as kforge's implicit GEMM on TF32 tensor cores, the bias and
the epilogue's chain applied in its NCHW stores. Each problem is built under the cuda-agent protocol (TF32
needs its tolerance), the skill must have applied and the kernel must be the implicit GEMM, the candidate
is verified by `kforge evaluate` on fresh random inputs (poisoned outputs), and its ModelNew is run here
against the problem's Model on inputs with a NaN pixel (NaN exactly where torch has NaN: the padded
reduction columns must not spread it). Shapes cover rows shorter than a tile and rows of several tiles,
stride, padding and dilation, a reduction that is not a multiple of 8 (3 channels, 5x5), 1 x k kernels,
no bias, no chain, and 8 to 64 output channels."""
import json
import os
import subprocess

import pytest
from conv_problem import check_against_model, conv_problem_source

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

# name: (the conv, the return statement after `x = self.conv(x)`, input shape); every Model also has a
# parameter `p` of shape (C_out, 1, 1).
CASES = {
    "hardswish_relu": ("nn.Conv2d(8, 64, 3)", "return torch.relu(nn.functional.hardswish(x))", (4, 8, 40, 40)),
    "rows_of_three_tiles_sub_p": ("nn.Conv2d(8, 32, 3)", "return torch.tanh(x - self.p)", (2, 8, 20, 300)),
    "stride_pad_dilation": ("nn.Conv2d(4, 16, 3, stride=2, padding=2, dilation=2)", "return x * self.p + 1.0",
                            (3, 4, 33, 47)),
    "rgb_5x5_padded_reduction": ("nn.Conv2d(3, 8, 5, padding=2)", "return torch.sigmoid(x)", (2, 3, 50, 50)),
    "no_bias_reduction_144": ("nn.Conv2d(16, 64, 3, bias=False)", "return nn.functional.mish(x - 0.5)",
                              (2, 16, 30, 140)),
    "one_by_five": ("nn.Conv2d(8, 24, (1, 5), padding=(0, 2))", "return nn.functional.leaky_relu(x / 2.0, 0.01)",
                    (2, 8, 9, 130)),
    "conv_alone": ("nn.Conv2d(8, 16, 3)", "return x", (3, 8, 21, 23)),
}


def problem_source(name):
    conv, ret, shape = CASES[name]
    return conv_problem_source(conv, [ret], shape, param="p", inputs="randn")


@pytest.mark.parametrize("name", sorted(CASES))
def test_implicit_gemm_conv_matches_torch(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(problem_source(name))
    out = tmp_path / "out"
    r = subprocess.run([KFORGE, "build", str(path), "--protocol", "cuda-agent", "--out", str(out), "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    schedule = json.loads((out / "schedule.json").read_text())
    assert any(a.startswith("conv_implicit_gemm:") for a in schedule["applied"]), schedule["applied"]
    kernels = "".join(p.read_text() for p in (out / "kernels").glob("k*.cu"))
    assert "_implicit_gemm<<<" in kernels and "kf_cudnn_conv" not in kernels
    r = subprocess.run([KFORGE, "evaluate", str(path), str(out / "model_new.py"), "--protocol", "cuda-agent",
                        "--json", "--no-profile"], capture_output=True, text=True, timeout=600)
    assert r.stdout, r.stderr
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["outcome"] == "ok" and res["verified"], res

    import torch

    g = torch.Generator().manual_seed(11)
    shape = CASES[name][2]
    # One NaN pixel (row 8, column 10 of sample 0, channel 0: even, so that the stride-2 dilation-2 case reads
    # it too): NaN at every output whose window has it. Both sides run the conv in TF32 (cuDNN's engine and ours
    # round differently): up to ~4e-3 apart on these shapes where the output is ~1 (tanh of a 72-term sum of
    # values ~2).
    check_against_model(str(out / "model_new.py"), f"kf_{name}", torch.randn(*shape, generator=g) * 2,
                        shape[-1] * 8 + 10, 5e-3)
