"""kforge explore (every reachable schedule evaluated and recorded) and kforge train --replay (the
policies compared on those records), on the CPU with the cost model: the log's shape, resume and its
refusals, and a comparison whose exhaustive search replays exactly the recorded states."""
import json
import os
import subprocess

import pytest

KFORGE = os.environ.get("KFORGE_BIN", os.path.join(os.path.dirname(__file__), "../../build/kforge"))
SHARED = os.path.join(os.path.dirname(__file__), "../../../shared/kernelbench")
RELU = os.path.join(SHARED, "level1/19_ReLU.py")
GEMM = os.path.join(SHARED, "level2/99_Matmul_GELU_Softmax.py")
SWISH = os.path.join(SHARED, "level1/25_Swish.py")

pytestmark = pytest.mark.skipif(not all(os.path.exists(p) for p in (RELU, GEMM, SWISH)),
                                reason="needs ../shared/kernelbench")


def kforge(*args, timeout=600):
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, timeout=timeout)


def records(path):
    """The log's lines but its header (the action space it was explored with: tests/cli/test_catalogue.py)."""
    with open(path) as f:
        return [r for r in (json.loads(line) for line in f if line.strip()) if "action_space" not in r]


def built_with_torch():
    r = kforge("train", "--stage", "warmup", "--out", "/nonexistent-kforge-probe/x", "--tasks", "/nonexistent")
    return "without libtorch" not in r.stderr


def explore(log, *extra):
    return kforge("explore", RELU, GEMM, "--device", "cpu", "--record", str(log), *extra)


def test_explore_records_every_state_then_resumes_and_refuses_to_overwrite(tmp_path):
    log = tmp_path / "log.jsonl"
    summary = tmp_path / "summary.json"
    r = explore(log, "--json", str(summary))
    assert r.returncode == 0, r.stderr
    lines = records(log)
    done = [x for x in lines if "task_done" in x]
    evals = [x for x in lines if "task_done" not in x]
    assert sorted(d["task_done"] for d in done) == ["19_ReLU", "99_Matmul_GELU_Softmax"]
    # One line per program (states that build the same kernels share one): a task's programs are
    # distinct, their count is the task's summary, and no more than its states.
    for d in done:
        mine = [e for e in evals if e["task"] == d["task_done"]]
        assert len(mine) == d["programs"] == len({e["program"] for e in mine}) <= d["states"]
        assert not d["capped"] and d["predicted"]
        assert all(e["result"]["predicted"] and e["protocol"] == "cuda-agent" for e in mine)
    assert max(d["programs"] for d in done) > 1  # the GEMM has choices
    assert "99_Matmul_GELU_Softmax" in r.stdout and "recorded 2 problems" in r.stdout
    assert json.load(open(summary))["problems"][0]["task_done"] == done[0]["task_done"]

    # An existing log is not overwritten without asking.
    before = log.read_text()
    again = explore(log)
    assert again.returncode == 2
    assert "exists" in again.stderr and "--resume" in again.stderr and "--force" in again.stderr
    assert log.read_text() == before
    both = explore(log, "--resume", "--force")
    assert both.returncode == 2 and "contradict" in both.stderr
    # --resume skips the finished tasks: nothing new.
    resumed = explore(log, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert log.read_text() == before
    # --force starts again.
    forced = explore(log, "--force", "--only", "19_ReLU")
    assert forced.returncode == 0, forced.stderr
    assert [x["task_done"] for x in records(log) if "task_done" in x] == ["19_ReLU"]


def test_explore_bad_input(tmp_path):
    r = kforge("explore", str(tmp_path / "nope"), "--record", str(tmp_path / "log.jsonl"), "--device", "cpu")
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = kforge("explore", RELU, "--record", str(tmp_path / "log.jsonl"), "--device", "cpu", "--only", "bogus")
    assert r.returncode == 2 and "no problems to explore" in r.stderr
    assert not (tmp_path / "log.jsonl").exists()


@pytest.mark.skipif(not built_with_torch(), reason="kforge was built without libtorch")
def test_train_compares_the_policies_on_the_recorded_states(tmp_path):
    log = tmp_path / "log.jsonl"
    assert explore(log).returncode == 0
    programs = sum(d["programs"] for d in records(log) if "task_done" in d)
    report = tmp_path / "report.json"
    # SWISH was not explored: it is left out of the comparison, and said so.
    r = kforge("train", "--preset", "ci", "--out", str(tmp_path / "run"), "--eval-tasks", RELU, GEMM, SWISH,
               "--replay", str(log), "--json", str(report))
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.load(open(report))
    assert rep["replay"]["tasks"] == 2 and rep["replay"]["left_out"] == ["25_Swish"]
    assert rep["eval_tasks"] == 2
    # Exhaustive search in replay evaluates exactly the recorded programs, each once.
    assert rep["exhaustive"]["evaluations"] == programs
    assert rep["predicted"]  # the log holds predictions, and the report does not pretend otherwise
    assert "replayed predictions" in rep["replay"]["evaluator"]
    assert "compared on: replayed predictions" in r.stdout
    assert "fraction_of_exhaustive_speedup" in rep["learned"]
    # Planned on the cost model, the learned policy is judged at the first schedule and the plan's end
    # only: at most two evaluations per task.
    planned = rep["learned-planned"]
    assert planned["evaluations"] <= 2 * planned["episodes"]
    assert planned["fraction_of_exhaustive_evaluations"] == planned["evaluations"] / programs
    assert set(rep["criterion"]["met_by"]) <= {"learned", "learned-planned"}
    assert rep["criterion"]["met"] == bool(rep["criterion"]["met_by"])
    assert "learned-planned: " in r.stdout

    no_eval = kforge("train", "--preset", "ci", "--out", str(tmp_path / "run2"), "--replay", str(log))
    assert no_eval.returncode == 2 and "--replay needs --eval-tasks" in no_eval.stderr
    missing = kforge("train", "--preset", "ci", "--out", str(tmp_path / "run3"), "--eval-tasks", RELU,
                     "--replay", str(tmp_path / "absent.jsonl"))
    assert missing.returncode == 2 and "absent.jsonl" in missing.stderr
    assert not (tmp_path / "run3").exists()


# A stand-in for `python3 -m kforge.harness --serve` (no GPU here): logs each request, answers ok with
# a candidate time drawn from the candidate's path and an eager time, and no torch.compile time.
FAKE_HARNESS = r'''#!/usr/bin/env python3
import json, os, sys, zlib
for line in sys.stdin:
    req = json.loads(line)
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps(req) + "\n")
    ans = {"outcome": "ok", "device": "Stand-in GPU", "torch": "9.9", "max_abs_err": 0.0, "max_rel_err": 0.0}
    if req["profile"]:
        t = 0.001 * (1 + (zlib.crc32(req["candidate"].encode()) % 1000) / 1000)
        ans.update(t_candidate=t, samples=req["trials"])
        if "eager" in req["timing"]["baselines"]:
            ans.update(t_eager=0.002, t_eager_repeat=0.00201)
    print(json.dumps(ans), flush=True)
'''


def test_explore_on_the_gpu_path_with_a_stand_in_harness(tmp_path):
    fake = tmp_path / "fake_harness.py"
    fake.write_text(FAKE_HARNESS)
    fake.chmod(0o755)
    env = dict(os.environ, KFORGE_ASSUME_GPU="1", KFORGE_HARNESS_PYTHON=str(fake), KFORGE_SANDBOX="none",
               FAKE_LOG=str(tmp_path / "requests.jsonl"))
    log = tmp_path / "log.jsonl"
    # The GEMM has 6 states (fp32, TF32 or 3xTF32, each with or without its epilogue), ReLU 1; --max-states 3 leaves the GEMM out rather than measure part of it.
    r = subprocess.run([KFORGE, "explore", RELU, GEMM, "--device", "cuda", "--no-compile", "--max-states", "3",
                        "--record", str(log), "--out", str(tmp_path / "cands")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "left out, more than 3 states" in r.stderr and "99_Matmul_GELU_Softmax" in r.stderr
    assert [x["task_done"] for x in records(log) if "task_done" in x] == ["19_ReLU"]
    r = subprocess.run([KFORGE, "explore", GEMM, "--device", "cuda", "--no-compile", "--eager-once", "--record",
                        str(log), "--resume", "--out", str(tmp_path / "cands")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "built the 6 programs of problems 1-1" in r.stderr
    evals = [x for x in records(log) if "task_done" not in x]
    assert len(evals) == 7 and all(not e["result"]["predicted"] for e in evals)
    reqs = records(tmp_path / "requests.jsonl")
    assert len(reqs) == 7 and all(q["profile"] and not any(b.startswith("compile") for b in q["timing"]["baselines"])
                                  for q in reqs)
    assert len({q["candidate"] for q in reqs}) == 7  # each program built and measured once
    # --eager-once: eager timed with the GEMM's first state only, its times given to the other five.
    assert ["eager" in q["timing"]["baselines"] for q in reqs[1:]] == [True] + [False] * 5
    assert all(e["result"]["t_eager"] == 0.002 and e["result"]["t_eager_repeat"] == 0.00201 for e in evals)

    if not built_with_torch():
        return
    report = tmp_path / "report.json"
    t = kforge("train", "--preset", "ci", "--out", str(tmp_path / "run"), "--eval-tasks", RELU, GEMM,
               "--replay", str(log), "--json", str(report))
    assert t.returncode == 0, t.stderr[-2000:]
    rep = json.load(open(report))
    assert rep["predicted"] is False and "replayed GPU measurements" in rep["replay"]["evaluator"]
    assert rep["exhaustive"]["evaluations"] == 7
    # No torch.compile times: the rate is unknown, not zero.
    assert rep["learned"]["faster_than_compile_rate"] is None
    assert "n/a (no compile times)" in t.stdout


def test_explore_resumes_inside_a_problem_without_measuring_again(tmp_path):
    fake = tmp_path / "fake_harness.py"
    fake.write_text(FAKE_HARNESS)
    fake.chmod(0o755)
    requests = tmp_path / "requests.jsonl"
    env = dict(os.environ, KFORGE_ASSUME_GPU="1", KFORGE_HARNESS_PYTHON=str(fake), KFORGE_SANDBOX="none",
               FAKE_LOG=str(requests))
    log = tmp_path / "log.jsonl"
    base = [KFORGE, "explore", GEMM, "--device", "cuda", "--no-compile", "--record", str(log),
            "--out", str(tmp_path / "cands")]

    def run(*extra):
        return subprocess.run(base + list(extra), capture_output=True, text=True, env=env, timeout=600)

    # A time limit already past: nothing is measured, the problem is not marked finished. (Whether the
    # limit is seen before the problem starts or at its first state depends on timing; both say so.)
    r = run("--time-limit", "0.001")
    assert r.returncode == 0, r.stderr
    assert "--time-limit" in r.stdout + r.stderr, r.stdout + r.stderr
    assert not requests.exists() and not any("task_done" in x for x in records(log))
    # The whole problem, then a log cut in the middle of it (as a killed run leaves it).
    r = run("--resume")
    assert r.returncode == 0, r.stderr
    full = log.read_text().splitlines()
    assert len(records(requests)) == 6 and "task_done" in full[-1]
    log.write_text("\n".join(full[:3]) + "\n")  # the header and two states
    requests.unlink()
    # --resume answers the two recorded states from the log and measures only the other four.
    r = run("--resume")
    assert r.returncode == 0, r.stderr
    assert len(records(requests)) == 4
    lines = records(log)
    assert [x["task_done"] for x in lines if "task_done" in x] == ["99_Matmul_GELU_Softmax"]
    assert len({x["state"] for x in lines if "task_done" not in x}) == 6
