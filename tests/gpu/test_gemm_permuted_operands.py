"""GPU test of matmuls that read their operands in place through permutes (the gemm_permuted_operands skill;
kernels/gemm_operands.h and codegen/emit_matmul.cpp; ctest label gpu, skipped without a GPU). Problems of every
layout the skill makes are built with `kforge build` under both protocols, whose plans must have folded every
permute (no permute kernel left, the form gemm_permuted_operands present), and run on fresh random inputs:
  - A @ B.T and A.T @ B (a transposed operand through the GEMM's op flag);
  - attention scores from [B, S, H, D] tensors (q.permute(0, 2, 1, 3) @ k.permute(0, 2, 3, 1)): per-batch
    pointers, since the (B, H) batch has no single stride (under kernelbench's 1e-4 the skill leaves these
    to the copy, as 3xTF32 would run pointers in exact fp32: checked that it does);
  - P @ V with V split into heads, then merged back (the output permute stays a copy);
  - a batched transpose against a shared operand (x.transpose(1, 2) @ w: a strided batch with stride 0);
  - a matrix-vector product of a transposed matrix.
Checked against torch (fp32, TF32 off) at the protocol's tolerance, the same result on a second call, and
after an operand changed in place. Under cuda-agent each problem is also built with the skill disabled, and
the table (pytest -s) prints both times beside eager's (CUDA events, median of 20, L2 not flushed). Run: KFORGE_BIN=build/kforge .venv/bin/python -m pytest -q -s
tests/gpu/test_gemm_permuted_operands.py"""
import concurrent.futures
import json
import os
import subprocess

import pytest

from gpu_util import check_like_reference, load, median_ms, problem_text as shared_problem_text

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(ROOT, "build", "kforge"))
TOLERANCE = {"kernelbench": 1e-4, "cuda-agent": 1e-2}
POINTER_BATCHES = {"scores", "pv_merge"}  # left to the copy under kernelbench (see above)

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

# name: (forward body, input shapes)
PROBLEMS = {
    "a_bt": ("return a @ b.T", [(512, 384), (768, 384)]),
    "at_b": ("return a.T @ b", [(384, 512), (384, 768)]),
    "scores": ("return (a.permute(0, 2, 1, 3) @ b.permute(0, 2, 3, 1)) * 0.125", [(4, 128, 8, 64), (4, 128, 8, 64)]),
    "pv_merge": ("p = torch.softmax(a, dim=-1)\nv = b.view(4, 128, 8, 64).transpose(1, 2)\n"
                 "return (p @ v).transpose(1, 2).reshape(4, 128, 512)", [(4, 8, 128, 128), (4, 128, 512)]),
    "shared_w": ("return a.transpose(1, 2) @ b", [(6, 256, 192), (256, 320)]),
    "matvec_t": ("return a.t() @ b", [(300, 200), (300,)]),
}


def problem_text(body, shapes):
    return shared_problem_text(body, shapes, ["a", "b"][: len(shapes)])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gemm_permuted")
    env = {**os.environ, "KFORGE_CACHE": str(tmp / "cache")}

    def build(key, path, protocol, *extra):
        out = tmp / key
        run = subprocess.run([KFORGE, "build", str(path), "--protocol", protocol, "--out", str(out), "--force",
                              "-j", "2", *extra], capture_output=True, text=True, timeout=600, env=env)
        assert run.returncode == 0, f"kforge build {key} failed:\n{run.stdout}{run.stderr}"
        return path, out

    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for name, (body, shapes) in PROBLEMS.items():
            path = tmp / f"{name}.py"
            path.write_text(problem_text(body, shapes))
            for protocol in TOLERANCE:
                key = f"{name}-{protocol}"
                jobs[key] = pool.submit(build, key, path, protocol)
            jobs[f"{name}-off"] = pool.submit(build, f"{name}-off", path, "cuda-agent", "--disable-skill",
                                              "gemm_permuted_operands")
        return {key: job.result() for key, job in jobs.items()}


@pytest.mark.parametrize("key", [f"{n}-{p}" for n in PROBLEMS for p in TOLERANCE])
def test_permuted_operands_read_in_place(built, key):
    import torch
    problem, out = built[key]
    name, protocol = key.split("-", 1)
    schedule = json.loads((out / "schedule.json").read_text())
    applied = " ".join(schedule.get("applied", []))
    if protocol == "kernelbench" and name in POINTER_BATCHES:
        assert "gemm_permuted_operands" not in applied, f"{key}: a pointer batch folded under 1e-4: {applied}"
    else:
        assert "gemm_permuted_operands" in applied, f"{key}: the skill was not applied: {applied}"
    ref_mod = load(str(problem), "kf_ref_" + key.replace("-", "_"))
    new_mod = load(str(out / "model_new.py"), "kf_new_" + key.replace("-", "_"))
    torch.backends.cuda.matmul.allow_tf32 = False
    ref, new = ref_mod.Model().cuda(), new_mod.ModelNew().cuda()
    tol = TOLERANCE[protocol]
    with torch.no_grad():
        xs = check_like_reference(key, ref_mod.get_inputs, ref, new, tol)
        t_new, t_ref = median_ms(new, xs, warm=3), median_ms(ref, xs, warm=3)
        line = f"\n{key:<26} {t_new:.4f} ms, eager {t_ref:.4f} ms"
        if protocol == "cuda-agent":  # the same problem with the skill off (the permutes copied)
            off_mod = load(str(built[f"{name}-off"][1] / "model_new.py"), "kf_off_" + name)
            off = off_mod.ModelNew().cuda()
            assert torch.allclose(off(*xs), new(*xs), atol=tol, rtol=tol), f"{key}: skill off differs"
            line += f", skill off {median_ms(off, xs, warm=3):.4f} ms"
            off_mod.kforge_release()
    print(line)
    new_mod.kforge_release()
