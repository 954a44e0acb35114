"""GPU tests of the conv_channels_last skill (ctest label gpu, skipped without a GPU): convolutions run
on channels-last copies, the result brought back to NCHW with the bias and the epilogue, verified
against torch on fresh random inputs under the cuda-agent protocol (1e-2), for a conv with an
epilogue, a conv without bias, a transposed 3-d conv and a 1-d conv."""
import json
import os
import subprocess
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

PROBLEMS = {
    # conv + bias, relu and a per-channel add: the epilogue runs in the pass back to NCHW.
    "conv2d_epilogue": ("nn.Conv2d(32, 64, 3)", "torch.relu(self.conv(x)) + self.p", "(64, 1, 1)", "(8, 32, 40, 40)"),
    # no bias, odd sizes (tiles cut at the edges: 37 channels, 23 x 19 outputs).
    "conv2d_no_bias_odd": ("nn.Conv2d(40, 37, 3, bias=False)", "torch.tanh(self.conv(x)) * self.p", "(37, 1, 1)",
                           "(5, 40, 25, 21)"),
    "conv_transpose3d": ("nn.ConvTranspose3d(32, 48, 3, stride=2, padding=1, output_padding=1)",
                         "torch.sigmoid(self.conv(x)) - self.p", "(48, 1, 1, 1)", "(4, 32, 8, 10, 12)"),
    "conv1d": ("nn.Conv1d(64, 96, 5, padding=2)", "torch.relu(self.conv(x) + self.p)", "(96, 1)", "(16, 64, 300)"),
}


def problem(tmp_path, name):
    conv, forward, p_shape, x_shape = PROBLEMS[name]
    path = tmp_path / (name + ".py")
    path.write_text(textwrap.dedent(f"""
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = {conv}
                self.p = nn.Parameter(torch.randn{p_shape})

            def forward(self, x):
                return {forward}


        def get_inputs():
            return [torch.rand{x_shape}]


        def get_init_inputs():
            return []
        """))
    return str(path)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_channels_last_conv_is_correct_on_the_gpu(tmp_path, name):
    r = subprocess.run([KFORGE, "optimize", problem(tmp_path, name), "--device", "cuda", "--protocol", "cuda-agent",
                        "--out", str(tmp_path / "out"), "--json", "--trials", "5"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    rep = json.loads(r.stdout)
    assert any(s.startswith("conv_channels_last") for s in rep["skills_applied"]), rep["skills_applied"]
    res = rep["result"]
    assert res["outcome"] == "ok" and res["verified"] and not res["predicted"], res
    assert res["max_abs_err"] < 1e-2, res
