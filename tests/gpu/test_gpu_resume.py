"""GPU tests (ctest label gpu) of the evaluator's durability and isolation with the real harness:
`kforge bench` killed mid-suite and resumed loses and repeats nothing; a candidate that looks for
the reference output in its own process finds none. Skipped without an NVIDIA GPU."""
import json
import os
import signal
import subprocess
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))
SHARED = os.environ.get("KFORGE_KERNELBENCH", os.path.join(HERE, "../../../shared/kernelbench"))
THREATS = os.path.join(HERE, "../threats")

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")


def test_bench_killed_midway_on_the_gpu_resumes_without_losing_or_repeating(tmp_path):
    only = "19_ReLU,20_LeakyReLU,21_Sigmoid,22_Tanh,23_Softmax,24_LogSoftmax"
    args = [KFORGE, "bench", "--suite", os.path.join(SHARED, "level1"), "--only", only, "--out",
            str(tmp_path / "out"), "--device", "cuda", "--workers", "1", "--trials", "5"]
    bench = tmp_path / "out" / "bench.json"
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    first = []
    while time.time() < deadline and p.poll() is None:  # kill it once some, not all, results are in
        if bench.exists():
            try:
                first = json.loads(bench.read_text())["problems"]
            except ValueError:
                first = []
            if 2 <= len(first) < 6:
                break
        time.sleep(0.2)
    assert p.poll() is None, "bench finished before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.wait()
    first = {r["problem"]: r for r in json.loads(bench.read_text())["problems"]}
    assert 2 <= len(first) < 6, sorted(first)
    r = subprocess.run(args + ["--resume"], capture_output=True, text=True, timeout=900)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    doc = json.loads(bench.read_text())
    names = [x["problem"] for x in doc["problems"]]
    assert sorted(names) == sorted(only.split(",")), names  # none lost, none twice
    for name, rec in first.items():  # what was measured before the kill is kept as it was
        again = next(x for x in doc["problems"] if x["problem"] == name)
        for key in ("verify_seconds", "outcome", "max_abs_err"):
            assert again.get(key) == rec.get(key), (name, key)
    assert all(x["outcome"] == "ok" and x["t_candidate_ms"] for x in doc["problems"]), doc["problems"]
    assert doc["predicted"] is False


@pytest.mark.parametrize("fixture", ["reference_scan.py", "caller_frames.py"])
def test_the_reference_output_is_out_of_the_candidates_reach(fixture):
    # Static checks off: the fixture's gc scan or frame walk runs, and must find nothing to copy.
    r = subprocess.run([KFORGE, "evaluate", os.path.join(THREATS, "problem_relu.py"), os.path.join(THREATS, fixture),
                        "--json", "--no-profile", "--no-static-check"], capture_output=True, text=True, timeout=600)
    res = json.loads(r.stdout)
    assert res["outcome"] == "wrong_answer", res
