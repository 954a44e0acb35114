"""GPU test (ctest label gpu) of `kforge explore` with the real harness: every program (the kernels a
state builds) of two small problems built, verified and timed once, recorded as measured, and resumable. Skipped without an
NVIDIA GPU. (The same command measured 68 KernelBench problems in bench/NOTES.md run 9.)"""
import json
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))
SHARED = os.environ.get("KFORGE_KERNELBENCH", os.path.join(HERE, "../../../shared/kernelbench"))

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")


def test_explore_measures_every_program_once_on_the_gpu(tmp_path):
    problems = [os.path.join(SHARED, "level1/19_ReLU.py"), os.path.join(SHARED, "level2/99_Matmul_GELU_Softmax.py")]
    log = tmp_path / "explore.jsonl"
    args = [KFORGE, "explore", *problems, "--device", "cuda", "--no-compile", "--trials", "5", "--record", str(log),
            "--out", str(tmp_path / "cands"), "--db", str(tmp_path / "m.sqlite")]
    r = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    done = {x["task_done"]: x for x in lines if "task_done" in x}
    evals = [x for x in lines if "task_done" not in x]
    assert set(done) == {"19_ReLU", "99_Matmul_GELU_Softmax"}
    assert len(evals) == sum(d["programs"] for d in done.values())
    for e in evals:
        res = e["result"]
        assert res["predicted"] is False and res["outcome"] == "ok", res
        assert res["t_candidate"] > 0 and res["t_eager"] > 0 and res["t_compile"] is None
    for name, d in done.items():
        programs = {e["program"] for e in evals if e["task"] == name}
        assert len(programs) == d["programs"] <= d["states"]  # each program measured once
    resumed = subprocess.run(args + ["--resume"], capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert len(log.read_text().splitlines()) == len(lines)  # nothing left to measure
