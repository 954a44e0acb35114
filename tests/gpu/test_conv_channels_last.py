"""GPU tests of channels-last convolutions (the codegen knob channels_last = 1, which the
conv_channels_last skill sets on 3-d convs; ctest label gpu, skipped without a GPU): the conv runs on
channels-last copies and the result comes back to NCHW with the bias and the epilogue, verified
against torch on fresh random inputs under the cuda-agent protocol (1e-2): a 2-d conv with an
epilogue, one without bias at odd sizes, one with 3 input channels, a transposed 3-d conv, a 1-d conv (the knob set in the
schedule by hand) and a 3-d conv (the default planner's own choice)."""
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
    # 3 input channels (an image): the input goes channels-last by the gather kernel, not by tiles.
    "conv2d_rgb": ("nn.Conv2d(3, 32, 5, stride=2, padding=1)", "torch.relu(self.conv(x)) - self.p", "(32, 1, 1)",
                   "(6, 3, 66, 50)"),
    "conv1d": ("nn.Conv1d(64, 96, 5, padding=2)", "torch.relu(self.conv(x) + self.p)", "(96, 1)", "(16, 64, 300)"),
    "conv3d_planned": ("nn.Conv3d(32, 64, 3)", "torch.relu(self.conv(x)) * self.p", "(64, 1, 1, 1)",
                       "(4, 32, 14, 14, 14)"),
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


def run(*args):
    r = subprocess.run([KFORGE, *args], capture_output=True, text=True, timeout=600)
    return r


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_channels_last_conv_is_correct_on_the_gpu(tmp_path, name):
    path = problem(tmp_path, name)
    schedule = tmp_path / "schedule.json"
    r = run("plan", path, "--protocol", "cuda-agent", "--out", str(schedule))
    assert r.returncode == 0, r.stderr + r.stdout
    sched = json.loads(schedule.read_text())
    convs = [k for k in sched["kernels"] if k["strategy"] in ("cudnn_conv", "cudnn_conv_transpose")]
    assert len(convs) == 1, sched
    if name.endswith("_planned"):
        assert any(a.startswith("conv_channels_last") for a in sched["applied"]), sched["applied"]
    else:
        convs[0].setdefault("knobs", {})["channels_last"] = 1
        convs[0]["knobs"].pop("implicit_gemm", None)  # conv2d_rgb's small reduction takes kforge's own GEMM
        schedule.write_text(json.dumps(sched))
    out = tmp_path / "out"
    r = run("build", path, "--schedule", str(schedule), "--protocol", "cuda-agent", "--out", str(out))
    assert r.returncode == 0, r.stderr + r.stdout
    assert "kf_launch_to_channels_last" in (out / "kernels" / (convs[0]["name"] + ".cu")).read_text()
    # Verified on fresh random inputs in a separate worker.
    r = run("evaluate", path, str(out / "model_new.py"), "--protocol", "cuda-agent", "--json", "--no-profile")
    assert r.stdout, r.stderr
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["outcome"] == "ok" and res["verified"], res
    assert res["max_abs_err"] < 1e-2, res


def test_engine_search_keeps_a_verified_engine(tmp_path):
    """conv_engine_search (the default planner's, cuda-agent): the first call times several cuDNN
    engines and keeps the fastest; the result is verified like any other, and the log names the choice."""
    path = problem(tmp_path, "conv2d_epilogue")
    schedule = tmp_path / "schedule.json"
    r = run("plan", path, "--protocol", "cuda-agent", "--out", str(schedule))
    assert r.returncode == 0, r.stderr + r.stdout
    sched = json.loads(schedule.read_text())
    assert any(a.startswith("conv_engine_search") for a in sched["applied"]), sched["applied"]
    out = tmp_path / "out"
    r = run("build", path, "--schedule", str(schedule), "--protocol", "cuda-agent", "--out", str(out))
    assert r.returncode == 0, r.stderr + r.stdout
    env = dict(os.environ, KFORGE_CUDNN_LOG="1")
    r = subprocess.run([KFORGE, "evaluate", path, str(out / "model_new.py"), "--protocol", "cuda-agent", "--json",
                        "--no-profile"], capture_output=True, text=True, timeout=600, env=env)
    assert r.stdout, r.stderr
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["outcome"] == "ok" and res["verified"], res
    assert res["max_abs_err"] < 1e-2, res
    print(r.stderr[-2000:])  # the engines timed and the one kept (pytest -s, or the log of a failure)
