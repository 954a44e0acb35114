"""GPU tests of the conv_reduce_epilogue skill (ctest label gpu, skipped without a GPU): a softmax,
log_softmax or sum/mean/amax/amin over the channels, a reduction over every spatial dim, or an
instance, group, batch or last-dim layer norm, or a 2-d or 3-d pool of non-overlapping windows, of a channels-last
convolution, with the chains before and after it, computed in the pass over cuDNN's channels-last result. Each problem is built
under the cuda-agent protocol (channels-last needs its tolerance), the skill must have applied, the
candidate is verified by `kforge evaluate` on fresh random inputs (poisoned outputs), and its ModelNew
is run here against the problem's Model on inputs scaled to large logits and with a NaN pixel (NaN
where torch has NaN). Shapes cover both tile loads (channels a multiple of 4 or not), positions that
leave a partial last tile, conv_transpose, 3-d convs and a conv without bias."""
import json
import os
import subprocess

import pytest
from conv_problem import check_against_model, conv_problem_source

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

# name: (the conv, a forward statement after `x = self.conv(x)` (or ""), the return statement, input shape);
# every Model also has a parameter `bias` of shape (C, 1, 1).
CASES = {
    "softmax_bias_scale_sigmoid": ("nn.Conv2d(16, 64, 3)", "x = torch.softmax(x, dim=1)",
                                   "return torch.sigmoid((x + self.bias) * 2.0)", (4, 16, 35, 35)),
    "transpose_log_softmax": ("nn.ConvTranspose2d(32, 36, 4, stride=2, padding=1)", "",
                              "return torch.log_softmax(x, dim=1)", (4, 32, 17, 17)),
    "relu_softmax_3d_odd_channels": ("nn.Conv3d(16, 30, 3)", "", "return torch.softmax(torch.relu(x), dim=1)",
                                     (2, 16, 12, 12, 13)),
    "min_keepdim_tanh_tanh": ("nn.Conv2d(16, 64, 3)", "x = torch.min(x, dim=1, keepdim=True)[0]",
                              "return torch.tanh(torch.tanh(x))", (4, 16, 35, 35)),
    "relu_amax_no_bias": ("nn.Conv2d(64, 28, 3, bias=False)", "", "return torch.amax(torch.relu(x), dim=1)",
                          (4, 64, 35, 35)),
    "gelu_mean_scaled": ("nn.Conv2d(16, 48, 3)", "", "return torch.mean(torch.nn.functional.gelu(x), dim=1) * 3.0",
                         (4, 16, 35, 35)),
    "gelu_global_avg_pool": ("nn.Conv2d(16, 64, 3)", "x = torch.nn.functional.gelu(x)",
                             "return torch.nn.functional.adaptive_avg_pool2d(x, 1) * 2.0", (4, 16, 35, 35)),
    "amax_spatial_3d": ("nn.Conv3d(16, 32, 3)", "x = torch.relu(x)", "return torch.amax(x, dim=[2, 3, 4])",
                        (2, 16, 12, 12, 13)),
    "instance_norm_divide": ("nn.Conv2d(16, 64, 3)", "x = torch.nn.functional.instance_norm(x)", "return x / 2.0",
                             (4, 16, 35, 35)),
    "relu_group_norm_scale": ("nn.Conv2d(16, 64, 3)", "x = torch.nn.functional.group_norm(torch.relu(x), 16)",
                              "return x * self.bias", (4, 16, 35, 35)),
    "group_norm_3d": ("nn.Conv3d(16, 32, 3)", "", "return torch.nn.functional.group_norm(x, 4)", (2, 16, 12, 12, 13)),
    "hardswish_max_pool_mish": ("nn.Conv2d(16, 64, 3)", "x = nn.functional.max_pool2d(nn.functional.hardswish(x - 0.5), 2)",
                                "return nn.functional.mish(x)", (4, 16, 35, 35)),
    "avg_pool4_sigmoid": ("nn.Conv2d(16, 24, 3)", "x = nn.functional.avg_pool2d(x, 4)", "return torch.sigmoid(x)",
                          (4, 16, 38, 38)),
    "layer_norm_last_dim_sigmoid": ("nn.Conv2d(16, 40, 3)", "x = nn.functional.layer_norm(x * self.bias, (64,))",
                                    "return torch.sigmoid(x)", (2, 16, 34, 66)),
    "layer_norm_short_rows": ("nn.Conv2d(32, 64, 3)", "x = nn.functional.layer_norm(x, (16,))",
                              "return torch.relu(x)", (8, 32, 130, 18)),
    "layer_norm_transpose_3d": ("nn.ConvTranspose3d(8, 24, 3, stride=2, padding=1, output_padding=1)",
                                "x = nn.functional.layer_norm(x + 1.0, (32,))", "return torch.sigmoid(x) * 2.0",
                                (2, 8, 4, 8, 16)),
    "batch_norm_scale": ("nn.Conv2d(16, 64, 3)", "x = nn.functional.batch_norm(x, None, None, training=True)",
                         "return x * self.bias", (4, 16, 35, 35)),
    "transpose_batch_norm_3d": ("nn.ConvTranspose3d(8, 16, 3, stride=2)", "x = nn.functional.batch_norm(x, None, None, "
                                "training=True)", "return x - 0.25", (2, 8, 5, 6, 7)),
    "transpose_max_pool_3d_sigmoid": ("nn.ConvTranspose3d(3, 16, 3, stride=2, padding=1, output_padding=1)",
                                      "x = nn.functional.max_pool3d(x, 2)", "return torch.sigmoid(x)", (2, 3, 5, 6, 7)),
    "avg_pool_3d_odd": ("nn.Conv3d(16, 24, 3)", "x = nn.functional.avg_pool3d(x, 2)", "return x * 2.0",
                        (2, 16, 12, 12, 13)),
    "sum_keepdim": ("nn.Conv2d(16, 40, 3)", "", "return torch.sum(x - 0.5, dim=1, keepdim=True)", (4, 16, 35, 35)),
}


def problem_source(name):
    conv, statement, ret, shape = CASES[name]
    return conv_problem_source(conv, [statement, ret], shape)


@pytest.mark.parametrize("name", sorted(CASES))
def test_channel_consumer_in_the_conv_pass_matches_torch(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(problem_source(name))
    out = tmp_path / "out"
    # The small-reduction convs here (16 input channels, 3x3) would otherwise run as kforge's implicit GEMM,
    # whose result is NCHW: no channels-last rows for the consumer's pass.
    r = subprocess.run([KFORGE, "build", str(path), "--protocol", "cuda-agent", "--out", str(out), "--json",
                        "--disable-skill", "conv_implicit_gemm"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    schedule = json.loads((out / "schedule.json").read_text())
    assert any(a.startswith("conv_reduce_epilogue:") for a in schedule["applied"]), schedule["applied"]
    kernels = "".join(p.read_text() for p in (out / "kernels").glob("k*.cu"))
    if "layer_norm" in name:  # whole rows of the last dim normalized in the transpose tile
        assert "_row_norm<<<" in kernels and "_from_channels_last" not in kernels
    elif "norm" in name:  # statistics from the rows, then the transpose back normalizes
        assert "_norm_stats<<<" in kernels and "_norm_chain(i, " in kernels
    else:
        assert any(k in kernels for k in ("_channels<<<", "_spatial<<<", "_pool<<<"))
        assert "_from_channels_last" not in kernels
    r = subprocess.run([KFORGE, "evaluate", str(path), str(out / "model_new.py"), "--protocol", "cuda-agent",
                        "--json", "--no-profile"], capture_output=True, text=True, timeout=600)
    assert r.stdout, r.stderr
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["outcome"] == "ok" and res["verified"], res

    import torch

    g = torch.Generator().manual_seed(11)
    shape = CASES[name][3]
    x = (torch.rand(*shape, generator=g) * 2 - 1) * 20  # large logits: exp overflows without the max
    # One NaN pixel: NaN at every position it reaches. Both sides run the conv in TF32 (different engines):
    # a sum over channels of values ~30 carries ~0.05 of rounding, so the absolute tolerance scales with the
    # output's magnitude.
    check_against_model(str(out / "model_new.py"), f"kf_{name}", x, shape[-1] * 5 + 7, 2e-3)
