"""GPU tests of strided inputs (ctest label gpu, skipped without a GPU): a caller may hand ModelNew a view
(a slice, a transpose, an expand, a column of indices); the library's kforge_dense_copy kernel
(src/codegen/runtime/kforge_dense_copy.cu) copies it into a dense tensor before the kernels run, so the answer is
the reference's. Each case builds one small problem and compares ModelNew with Model on views of fresh random
inputs of several dtypes, and checks that the caller's view is left unchanged."""
import os
import subprocess
import textwrap

import pytest

from gpu_util import load

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

PROBLEM = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, a, b, idx, mask):
            picked = torch.gather(a, 1, idx)
            return torch.where(mask, torch.tanh(picked) * b, b - 1.0)


    def get_inputs():
        return [torch.randn(64, 512), torch.randn(64, 96), torch.randint(0, 512, (64, 96)),
                torch.rand(64, 96) > 0.5]


    def get_init_inputs():
        return []
    """)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("strided")
    path = tmp / "strided_inputs.py"
    path.write_text(PROBLEM)
    out = tmp / "out"
    r = subprocess.run([KFORGE, "build", str(path), "--protocol", "cuda-agent", "--out", str(out), "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    return out / "model_new.py"


def views():
    """(name, inputs) where at least one input is a strided view of the shape the kernels were built for."""
    import torch
    dev = "cuda"
    a = torch.randn(64, 512, device=dev)
    b = torch.randn(64, 96, device=dev)
    idx = torch.randint(0, 512, (64, 96), device=dev)
    mask = torch.rand(64, 96, device=dev) > 0.5
    wide = torch.randn(64, 700, device=dev)
    yield "dense", [a, b, idx, mask]
    yield "a column slice", [wide[:, 100:612], b, idx, mask]
    yield "a transpose", [torch.randn(512, 64, device=dev).t(), b, idx, mask]
    yield "an expand (stride 0)", [a, torch.randn(1, 96, device=dev).expand(64, 96), idx, mask]
    yield "int64 indices sliced", [a, b, torch.argsort(torch.rand(64, 512, device=dev), dim=1)[:, :96], mask]
    yield "a bool mask transposed", [a, b, idx, (torch.rand(96, 64, device=dev) > 0.5).t()]
    yield "every input a view", [wide[:, 3:515], torch.randn(96, 64, device=dev).t(),
                                 torch.randint(0, 512, (64, 192), device=dev)[:, ::2], mask[:, :].t().t()]


def test_strided_inputs_give_the_reference_answer(built):
    import torch
    mod = load(str(built), "kf_strided")
    ref = mod.Model().cuda().eval()
    new = mod.ModelNew().cuda().eval()
    seen_views = 0
    with torch.no_grad():
        for name, xs in views():
            seen_views += sum(not x.is_contiguous() for x in xs)
            before = [x.clone() for x in xs]
            want = ref(*xs)
            got = new(*xs)
            torch.cuda.synchronize()
            assert got.shape == want.shape, name
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), \
                f"{name}: max abs difference {(got - want).abs().max().item()}"
            for x, x0 in zip(xs, before):
                assert torch.equal(x, x0), f"{name}: the caller's input was changed"
    assert seen_views >= 7
    mod.kforge_release()


def test_a_view_of_the_wrong_shape_is_still_refused(built):
    import torch
    mod = load(str(built), "kf_strided_shape")
    new = mod.ModelNew().cuda().eval()
    a = torch.randn(64, 700, device="cuda")[:, :500]
    with pytest.raises(ValueError, match="were built for"):
        new(a, torch.randn(64, 96, device="cuda"), torch.randint(0, 500, (64, 96), device="cuda"),
            torch.rand(64, 96, device="cuda") > 0.5)
