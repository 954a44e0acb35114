"""kforge bench's GPU flow on a machine without a GPU: a stand-in harness worker answers for the
GPU (KFORGE_ASSUME_GPU=1, KFORGE_HARNESS_PYTHON), so building, verifying in parallel, profiling,
metrics, the JSON and the exit code are checked end to end. The real harness runs in tests/gpu."""
import json
import os
import subprocess
import sys

KFORGE = os.environ.get("KFORGE_BIN", os.path.join(os.path.dirname(__file__), "../../build/kforge"))
# Problems shipped with kforge (tests/problems): no sibling ../shared folder needed.
PROBLEMS = os.path.join(os.path.dirname(__file__), "../problems")

FAKE = r'''#!PYTHON
import json, os, sys
for line in sys.stdin:
    req = json.loads(line)
    if req.get("cmd") == "precompile_reference":  # the baselines worker: torch.compile's cold first call
        print(json.dumps({"outcome": "ok", "precompile_seconds": 42.0}), flush=True)
        continue
    name = os.path.basename(os.path.dirname(req["candidate"]))
    if not req["verify"] and not req["profile"]:
        raise SystemExit("a request that asks for nothing")
    ans = {"outcome": "ok", "device": "Stand-in GPU", "torch": "9.9", "max_abs_err": 0.0, "max_rel_err": 0.0}
    if name.startswith("20_"):
        ans = {"outcome": "wrong_answer", "message": "seed 1000: output 0 differs", "max_abs_err": 1.0}
    if name.startswith("22_") and req["verify"]:
        # Out of memory the first time (as when sharing the GPU), fine the second (alone).
        marker = os.path.join(os.path.dirname(req["candidate"]), "was_oom")
        if not os.path.exists(marker):
            open(marker, "w").close()
            ans = {"outcome": "resource_exhausted", "message": "CUDA out of memory"}
    if req["profile"]:
        fast = name.startswith("19_")
        t = 0.001 if fast else 0.003
        ans.update(t_candidate=t, t_candidate_repeat=t * 1.01, t_eager=0.002, t_compile=0.0025, samples=req["trials"])
    print(json.dumps(ans), flush=True)
'''


def test_bench_gpu_flow_with_a_stand_in_harness(tmp_path):
    fake = tmp_path / "fake_harness.py"
    fake.write_text(FAKE.replace("PYTHON", sys.executable))
    fake.chmod(0o755)
    suite = tmp_path / "suite" / "level1"
    suite.mkdir(parents=True)
    for name in ("19_ReLU.py", "20_LeakyReLU.py", "21_Sigmoid.py", "22_Tanh.py"):
        (suite / name).write_text(open(os.path.join(PROBLEMS, "level1", name)).read())
    env = dict(os.environ, KFORGE_SANDBOX="none", KFORGE_ASSUME_GPU="1", KFORGE_HARNESS_PYTHON=str(fake))
    js = tmp_path / "bench.json"
    r = subprocess.run([KFORGE, "bench", "--suite", str(tmp_path / "suite"), "--json", str(js), "--out",
                        str(tmp_path / "out"), "--trials", "4", "--workers", "2"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr  # one wrong answer
    doc = json.loads(js.read_text())
    assert doc["predicted"] is False and doc["device"] == "Stand-in GPU" and doc["torch"] == "9.9"
    by = {p["problem"]: p for p in doc["problems"]}
    assert by["19_ReLU"]["outcome"] == "ok" and by["19_ReLU"]["reward"] == 3
    assert by["19_ReLU"]["t_candidate_ms"] == 1.0 and by["19_ReLU"]["samples"] == 4
    # The stand-in's 1 ms for a 6 GiB ReLU is under half its 3 ms roofline floor: flagged.
    assert by["19_ReLU"]["below_floor"] is True and by["21_Sigmoid"]["below_floor"] is False
    assert by["20_LeakyReLU"]["outcome"] == "wrong_answer" and by["20_LeakyReLU"]["reward"] == -1
    assert by["20_LeakyReLU"]["t_candidate_ms"] is None
    assert by["21_Sigmoid"]["reward"] == 1  # correct, slower than eager
    assert by["22_Tanh"]["outcome"] == "ok"  # out of memory beside others, verified again alone
    assert "verify alone: ok" in r.stderr
    s = doc["summary"]["level1"]
    assert s["problems"] == 4 and s["correct"] == 3 and abs(s["pass_rate"] - 3 / 4) < 1e-9
    assert abs(s["faster_than_eager"] - 1 / 4) < 1e-9 and abs(s["faster_than_compile"] - 1 / 4) < 1e-9
    assert abs(s["speedup_vs_eager"] - (2 * (2 / 3) ** 2) ** (1 / 3)) < 1e-9
    assert abs(s["max_repeat_diff"] - 0.01) < 1e-9 and by["19_ReLU"]["t_candidate_repeat_ms"] == 1.01
    assert "level1/20_LeakyReLU: wrong_answer" in r.stdout
    assert "Stand-in GPU" in r.stdout
    # Build time beside torch.compile's cold first call (the precompile), for the verified problems.
    assert by["19_ReLU"]["compile_cold_seconds"] == 42.0 and "compile_cold_seconds" not in by["20_LeakyReLU"]
    line = [x for x in r.stdout.splitlines() if x.startswith("build (import, plan, nvcc): median ")]
    assert line and "; torch.compile cold first call: median 42.0 s, max 42.0 s; build <= compile's cold call on " \
        in line[0], r.stdout
    assert " (the import: median " in line[0], line  # where the build time went (bench.json: build_stages)
    built = [p for p in doc["problems"] if p["build_seconds"] > 0]
    assert built and all("import" in p["build_stages"] for p in built), built
    within, paired = line[0].rsplit(" ", 1)[1].split("/")
    assert within == paired and int(paired) == sum("compile_cold_seconds" in p for p in doc["problems"]) >= 2, line


def test_bench_time_limit_leaves_unreached_problems_out(tmp_path):
    fake = tmp_path / "fake_harness.py"
    fake.write_text(FAKE.replace("PYTHON", sys.executable))
    fake.chmod(0o755)
    env = dict(os.environ, KFORGE_SANDBOX="none", KFORGE_ASSUME_GPU="1", KFORGE_HARNESS_PYTHON=str(fake))
    js = tmp_path / "bench.json"
    r = subprocess.run([KFORGE, "bench", "--suite", os.path.join(PROBLEMS, "level1"), "--only",
                        "19_ReLU,21_Sigmoid,22_Tanh,23_Softmax,24_LogSoftmax,25_Swish", "--json", str(js),
                        "--out", str(tmp_path / "out"), "--time-limit", "0.5", "-j", "1", "--no-profile"],
                       capture_output=True, text=True, env=env, timeout=600)
    doc = json.loads(js.read_text())
    assert doc["skipped_for_time_limit"] >= 1
    assert len(doc["problems"]) + doc["skipped_for_time_limit"] == 6
    assert all(p["outcome"] == "ok" for p in doc["problems"])
    assert "not reached before --time-limit" in r.stdout


SLOW = r'''#!PYTHON
import json, os, sys, time
log = os.environ["FAKE_LOG"]
for line in sys.stdin:
    req = json.loads(line)
    if req.get("cmd") == "precompile_reference":  # the baselines worker: torch.compile's cold first call
        print(json.dumps({"outcome": "ok", "precompile_seconds": 42.0}), flush=True)
        continue
    name = os.path.basename(os.path.dirname(req["candidate"]))
    with open(log, "a") as f:
        f.write("%s %s\n" % ("verify" if req["verify"] else "profile", name))
    time.sleep(0.7)
    ans = {"outcome": "ok", "device": "Stand-in GPU", "torch": "9.9", "max_abs_err": 0.0, "max_rel_err": 0.0}
    if req["profile"]:
        ans.update(t_candidate=0.001, t_candidate_repeat=0.001, t_eager=0.002, t_compile=0.002, samples=2)
    print(json.dumps(ans), flush=True)
'''


def test_bench_killed_midway_resumes_without_losing_or_repeating(tmp_path):
    import signal
    import time
    fake = tmp_path / "slow_harness.py"
    fake.write_text(SLOW.replace("PYTHON", sys.executable))
    fake.chmod(0o755)
    log = tmp_path / "requests.log"
    env = dict(os.environ, KFORGE_SANDBOX="none", KFORGE_ASSUME_GPU="1", KFORGE_HARNESS_PYTHON=str(fake), FAKE_LOG=str(log))
    only = "19_ReLU,20_LeakyReLU,21_Sigmoid,22_Tanh,23_Softmax,24_LogSoftmax"
    args = [KFORGE, "bench", "--suite", os.path.join(PROBLEMS, "level1"), "--only", only, "--out",
            str(tmp_path / "out"), "--workers", "1", "-j", "2", "--trials", "2"]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    bench = tmp_path / "out" / "bench.json"
    deadline = time.time() + 120
    while time.time() < deadline:  # kill it once some, not all, results are in
        if bench.exists() and 2 <= len(json.loads(bench.read_text())["problems"]) < 6:
            break
        time.sleep(0.1)
    p.send_signal(signal.SIGKILL)
    p.wait()
    first = {(r["problem"]): r for r in json.loads(bench.read_text())["problems"]}
    assert 2 <= len(first) < 6
    verified_before = set(first)
    # Starting over in the same directory needs --resume or --force.
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 2 and "--resume" in r.stderr
    r = subprocess.run(args + ["--resume"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads(bench.read_text())
    names = [x["problem"] for x in doc["problems"]]
    assert sorted(names) == sorted(only.split(","))  # none lost, none twice
    for name, rec in first.items():  # what was measured before is kept as it was
        again = next(x for x in doc["problems"] if x["problem"] == name)
        assert again["verify_seconds"] == rec["verify_seconds"]
    verifies = [l.split()[1] for l in log.read_text().splitlines() if l.startswith("verify")]
    for name in verified_before:
        assert verifies.count(name) == 1, (name, verifies)  # not verified again
    assert all(x["t_candidate_ms"] for x in doc["problems"])  # and everything got timed
    # A resume of another protocol is refused with the reason.
    r = subprocess.run(args + ["--resume", "--protocol", "kernelbench"], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "protocol" in r.stderr
