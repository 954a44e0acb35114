"""Shared by the GPU tests of kforge's convolution kernels (test_conv_channel_consumers.py,
test_conv_implicit_gemm.py): a problem file of one conv, a parameter of one value per channel and the
statements after the conv; the built ModelNew loaded; and its check against the problem's Model on an input
with a NaN pixel (NaN exactly where torch has NaN, the rest within a tolerance scaled to the output)."""
import importlib.util


def conv_problem_source(conv, statements, shape, param="bias", inputs="rand", param_dims=2):
    """`conv` (an nn.Conv*/ConvTranspose* expression) as self.conv, a parameter `param` of shape (C_out, 1, ...)
    (param_dims ones), forward: x = self.conv(x) then `statements` (the last one returns; empty ones are left
    out); get_inputs: torch.<inputs>(*shape)."""
    channels = int(conv.split("(")[1].split(",")[1])
    ones = ", ".join(["1"] * param_dims)
    lines = [
        "import torch",
        "import torch.nn as nn",
        "",
        "",
        "class Model(nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        f"        self.conv = {conv}",
        f"        self.{param} = nn.Parameter(torch.randn({channels}, {ones}))",
        "",
        "    def forward(self, x):",
        "        x = self.conv(x)",
    ]
    lines += [f"        {s}" for s in statements if s]
    lines += [
        "",
        "",
        "def get_inputs():",
        f"    return [torch.{inputs}{tuple(shape)}]",
        "",
        "",
        "def get_init_inputs():",
        "    return []",
        "",
    ]
    return "\n".join(lines)


def load(path, module):
    spec = importlib.util.spec_from_file_location(module, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def check_against_model(model_new_path, module, x, nan_index, abs_tol):
    """Runs the built ModelNew (weights copied from a seeded Model) and the Model on x with x.view(-1)[nan_index]
    set to NaN: same shape and dtype, NaN exactly where torch has NaN (torch must have some), and the rest within
    rtol 1e-2 and abs_tol times the output's largest magnitude (at least 1)."""
    import torch

    mod = load(model_new_path, module)
    try:
        torch.manual_seed(3)
        ref = mod.Model().cuda().eval()
        new = mod.ModelNew().cuda().eval()
        new.load_state_dict(ref.state_dict())
        x = x.clone()
        x.view(-1)[nan_index] = float("nan")
        x = x.cuda()
        with torch.no_grad():
            want = ref(x)
            got = new(x)
        torch.cuda.synchronize()
        assert got.shape == want.shape and got.dtype == want.dtype
        assert torch.isnan(want).any(), "the NaN pixel reaches no output: choose another index"
        assert torch.equal(torch.isnan(got), torch.isnan(want)), "NaN where torch has none, or the reverse"
        tol = abs_tol * max(1.0, want.nan_to_num(0.0).abs().max().item())
        assert torch.allclose(got, want, rtol=1e-2, atol=tol, equal_nan=True), \
            f"max abs difference {(got - want).abs().nan_to_num(0.0).max().item()}"
    finally:
        if hasattr(mod, "kforge_release"):
            mod.kforge_release()
