"""GPU test of the import rules added in session 10 (ctest label gpu, skipped without a GPU): torch's advanced
indexing with integer tensors (reads, writes, index_put/index_add/index_copy/index_fill), tril_indices, pdist,
histc, copysign, max_pool2d's indices and max_unpool2d. Each decomposes into ops kforge had (index_select, scatter,
scatter_add, argmax over unfold views, ...); the decompositions are checked exactly on the CPU against torch by
tests/python/test_import_generality.py through the graph executor. Here each problem is built with `kforge build`
(cuda-agent) and its ModelNew compared with the Model (same weights) on two fresh random input sets: every output,
integer ones exactly.
Run: KFORGE_BIN=build/kforge .venv/bin/python -m pytest -q -s tests/gpu/test_import_rules_gpu.py"""
import os
import textwrap

import pytest

from gpu_util import build_all, load

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(ROOT, "build", "kforge"))
TOL = 1e-2  # the cuda-agent protocol's (its bmm may run on TF32); integer outputs are compared exactly

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

PROBLEMS = {
    "segnet_pool_unpool": """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = nn.MaxPool2d(2, stride=2, return_indices=True)
                self.unpool = nn.MaxUnpool2d(2, stride=2)

            def forward(self, x):
                y, idx = self.pool(x)
                v, j = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
                return self.unpool(torch.relu(y), idx, output_size=x.shape[-2:]), idx, v, j

        def get_inputs():
            return [torch.randn(4, 16, 64, 48)]

        def get_init_inputs():
            return []
    """,
    "dlrm_interactions_and_writes": """
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("rows", torch.tensor([0, 5, -2, 3]))

            def forward(self, t, x):
                z = torch.bmm(t, t.transpose(1, 2))
                li, lj = torch.tril_indices(27, 27, offset=-1)
                pairs = z[:, li, lj]
                w = x.clone()
                w[:, self.rows] = 0.5
                added = x.index_add(1, self.rows.remainder(6), x[:, :4] * 2.0)  # CUDA's index_add asserts on negatives
                picked = x[self.rows[:2], :, self.rows[1:3]]
                return pairs, w, added, picked, li

        def get_inputs():
            return [torch.randn(64, 27, 16), torch.randn(8, 6, 32)]

        def get_init_inputs():
            return []
    """,
    "histc_pdist_copysign": """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def forward(self, f):
                return (torch.histc(f, bins=32, min=-2.0, max=2.0), torch.histc(f[:16], bins=7),
                        F.pdist(f[:64], p=2.0), torch.copysign(f, -f.flip(0)))

        def get_inputs():
            return [torch.randn(256, 64)]

        def get_init_inputs():
            return []
    """,
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    sources = {name: textwrap.dedent(text).lstrip() for name, text in PROBLEMS.items()}
    return build_all(KFORGE, tmp_path_factory.mktemp("rules"), sources, workers=4)


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_import_rule_problem_matches_torch(built, name):
    import torch
    problem, out = built[name]
    ref_mod = load(str(problem), "kf_ref_" + name)
    new_mod = load(str(out / "model_new.py"), "kf_new_" + name)
    ref = ref_mod.Model().cuda().eval()
    new = new_mod.ModelNew().cuda().eval()
    new.load_state_dict(ref.state_dict())
    with torch.no_grad():
        for seed in (1, 2):
            torch.manual_seed(seed)
            xs = [x.cuda() for x in ref_mod.get_inputs()]
            got, want = new(*xs), ref(*xs)
            got = got if isinstance(got, tuple) else (got,)
            want = want if isinstance(want, tuple) else (want,)
            assert len(got) == len(want), name
            for i, (g, w) in enumerate(zip(got, want)):
                assert g.shape == w.shape and g.dtype == w.dtype, (name, i, g.shape, w.shape, g.dtype, w.dtype)
                w = w.to(g.device)  # torch.tril_indices without device= gives the reference's output on the CPU
                if w.dtype.is_floating_point:
                    assert torch.allclose(g, w, atol=TOL, rtol=TOL), \
                        f"{name} output {i}: max abs difference {(g - w).abs().max().item():.3g}"
                else:
                    assert torch.equal(g, w), f"{name} output {i}: {(g != w).sum().item()} elements differ"
    new_mod.kforge_release()
