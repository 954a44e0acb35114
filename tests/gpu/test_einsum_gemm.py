"""GPU test of the einsum_gemm skill (ctest label gpu, skipped without a GPU): an einsum that is one
GEMM on its operands as stored runs as a cuBLAS GEMM, verified against torch.einsum on fresh random
inputs under both protocols (kernelbench: exact fp32 at 1e-4; cuda-agent: TF32 at 1e-2). Inputs in
[0, 1), as KernelBench's. With randn operands bij,bjk->bik failed under cuda-agent in run 7 (its
message was not kept: the call's file limit); TF32's expected error there (K = 72, about 2e-3 per
output, ~1e-2 at the tail of 67k outputs) is at the 1e-2 tolerance near zero outputs, which would test
TF32's rounding, not the GEMM's layout this test is about."""
import json
import os
import subprocess
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

EQUATIONS = {
    "bijl,lk->bijk": ("(4, 8, 16, 96)", "(96, 80)"),
    "bij,bjk->bik": ("(6, 40, 72)", "(6, 72, 56)"),
    "ik,jk->ij": ("(130, 70)", "(90, 70)"),
    "ki,kj->ij": ("(70, 130)", "(70, 90)"),
}


@pytest.mark.parametrize("protocol", ["kernelbench", "cuda-agent"])
@pytest.mark.parametrize("equation", sorted(EQUATIONS))
def test_einsum_as_a_cublas_gemm_is_correct(tmp_path, equation, protocol):
    a, b = EQUATIONS[equation]
    path = tmp_path / "einsum_problem.py"
    path.write_text(textwrap.dedent(f"""
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, a, b):
                return torch.einsum("{equation}", a, b)


        def get_inputs():
            return [torch.rand{a}, torch.rand{b}]


        def get_init_inputs():
            return []
        """))
    out = tmp_path / "out"
    r = subprocess.run([KFORGE, "build", str(path), "--protocol", protocol, "--out", str(out), "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    assert any(s.startswith("einsum_gemm") for s in json.loads(r.stdout)["skills_applied"]), r.stdout
    r = subprocess.run([KFORGE, "evaluate", str(path), str(out / "model_new.py"), "--protocol", protocol, "--json",
                        "--no-profile"], capture_output=True, text=True, timeout=600)
    assert r.stdout, r.stderr
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["outcome"] == "ok" and res["verified"], res
