"""The agent judged on the GPU (`kforge optimize --device cuda --policy ...`) on a machine without one:
a stand-in harness worker answers for the GPU (KFORGE_ASSUME_GPU=1, KFORGE_HARNESS_PYTHON), so each
candidate of the episode is really generated and built with nvcc, then sent to the harness to verify
and time. Checks that the episode's results are measured (not predicted), that a wrong answer earns
-1, and that a schedule evaluated again is not built again. The real harness runs in tests/gpu."""
import json
import os
import subprocess
import sys

import pytest

KFORGE = os.environ.get("KFORGE_BIN", os.path.join(os.path.dirname(__file__), "../../build/kforge"))
LEVEL1 = os.path.join(os.path.dirname(__file__), "../../../shared/kernelbench/level1")
RELU = os.path.join(LEVEL1, "19_ReLU.py")
MATMUL = os.path.join(LEVEL1, "1_Square_matrix_multiplication_.py")  # one tf32_contractions site

FAKE = r'''#!PYTHON
import json, os, sys
for line in sys.stdin:
    req = json.loads(line)
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps(req) + "\n")
    if os.environ.get("FAKE_ANSWER") == "wrong":
        ans = {"outcome": "wrong_answer", "message": "seed 1000: output 0 differs", "max_abs_err": 1.0}
    else:
        ans = {"outcome": "ok", "device": "Stand-in GPU", "torch": "9.9", "max_abs_err": 0.0, "max_rel_err": 0.0}
        if req["profile"]:
            ans.update(t_candidate=0.001, t_eager=0.002, t_compile=0.0025, samples=req["trials"])
    print(json.dumps(ans), flush=True)
'''


def fake_env(tmp_path, answer="ok"):
    if not os.path.exists(RELU):
        pytest.skip("the shared KernelBench problems are not here")
    fake = tmp_path / "fake_harness.py"
    fake.write_text(FAKE.replace("PYTHON", sys.executable))
    fake.chmod(0o755)
    log = tmp_path / "requests.jsonl"
    return log, dict(os.environ, KFORGE_SANDBOX="none", KFORGE_ASSUME_GPU="1", KFORGE_HARNESS_PYTHON=str(fake),
                     FAKE_LOG=str(log), FAKE_ANSWER=answer)


def optimize(tmp_path, env, policy, *extra, problem=RELU):
    out = tmp_path / "out"
    r = subprocess.run([KFORGE, "optimize", problem, "--device", "cuda", "--policy", policy, "--out", str(out),
                        "--trials", "3", "--json", *extra], capture_output=True, text=True, env=env, timeout=900)
    return out, r


def requests(log):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_agent_episode_is_measured_on_the_gpu(tmp_path):
    log, env = fake_env(tmp_path)
    out, r = optimize(tmp_path, env, "heuristic")
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    agent = report["agent"]
    assert agent["predicted"] is False and agent["evaluator"] == "GPU harness (measured)"
    assert "measured on the GPU" in agent["times"]
    assert agent["reward"] == 3  # the stand-in's 1 ms beats eager (2 ms) and torch.compile (2.5 ms)
    assert report["result"]["predicted"] is False and report["device"] == "Stand-in GPU"
    seen = requests(log)
    candidates = os.path.realpath(agent["candidates_dir"])
    assert candidates.startswith(os.path.realpath(out / "agent"))
    episode = [q for q in seen if os.path.realpath(q["candidate"]).startswith(candidates + os.sep)]
    # Each of the episode's evaluations was one verify + profile request, on a candidate built in its own directory.
    assert len(episode) == agent["evaluations"] == agent["harness_requests"] >= 1
    for q in episode:
        assert q["verify"] is True and q["profile"] is True and q["trials"] == 3
        assert os.path.realpath(q["problem"]) == os.path.realpath(RELU)
        assert os.path.exists(q["candidate"])
    assert agent["candidates_built"] == len({q["candidate"] for q in episode})
    # Then the chosen schedule is measured once more where optimize writes it.
    assert os.path.realpath(seen[-1]["candidate"]) == os.path.realpath(out / "model_new.py")
    assert len(seen) == len(episode) + 1


def test_a_wrong_answer_earns_minus_one(tmp_path):
    log, env = fake_env(tmp_path, answer="wrong")
    out, r = optimize(tmp_path, env, "heuristic")
    assert r.returncode == 1, r.stderr[-3000:]  # the final candidate is wrong too
    report = json.loads(r.stdout)
    assert report["agent"]["predicted"] is False and report["agent"]["reward"] == -1
    assert report["result"]["outcome"] == "wrong_answer" and report["result"]["reward"] == -1
    assert report["result"]["predicted"] is False
    assert all(q["verify"] for q in requests(log))


def test_a_schedule_evaluated_again_is_not_built_again(tmp_path):
    # The search policy looks ahead at the tf32 schedule, then steps to it: the same schedule twice.
    log, env = fake_env(tmp_path)
    out, r = optimize(tmp_path, env, "search", "--turns", "3", problem=MATMUL)
    assert r.returncode == 0, r.stderr[-3000:]
    agent = json.loads(r.stdout)["agent"]
    episode = [q for q in requests(log) if "/agent/" in q["candidate"]]
    assert len(episode) == agent["harness_requests"] == agent["evaluations"]
    distinct = {q["candidate"] for q in episode}
    assert agent["candidates_built"] == len(distinct)
    assert agent["candidates_built"] < agent["harness_requests"], agent
    assert agent["actions"][0].startswith("tf32_contractions")


def test_planned_on_the_cost_model_the_gpu_judges_the_first_schedule_and_the_end(tmp_path):
    # The heuristic on the GEMM: tf32 then the epilogue fusion, planned on the cost model; the GPU
    # (stand-in) is asked about the first schedule and the plan's end, where the heuristic stops (it
    # judges by the cost model, which the plan has exhausted), then the final measurement.
    gemm = os.path.join(os.path.dirname(LEVEL1), "level2/99_Matmul_GELU_Softmax.py")
    log, env = fake_env(tmp_path)
    out, r = optimize(tmp_path, env, "heuristic", "--planned", problem=gemm)
    assert r.returncode == 0, r.stderr[-3000:]
    agent = json.loads(r.stdout)["agent"]
    assert agent["policy"] == "heuristic (planned, refined)" and agent["predicted"] is False
    assert len(agent["actions"]) >= 2  # the plan applied more than one skill
    episode = [q for q in requests(log) if "/agent/" in q["candidate"]]
    assert agent["evaluations"] == agent["harness_requests"] == len(episode) == 2
    # The same plan unplanned measures every turn.
    (tmp_path / "unplanned").mkdir()
    log2, env2 = fake_env(tmp_path / "unplanned")
    out2, r2 = optimize(tmp_path / "unplanned", env2, "heuristic", problem=gemm)
    assert r2.returncode == 0, r2.stderr[-3000:]
    agent2 = json.loads(r2.stdout)["agent"]
    assert agent2["evaluations"] > agent["evaluations"]
    assert agent2["actions"][:len(agent["actions"])] == agent["actions"]


def test_the_cpu_agent_is_unchanged(tmp_path):
    log, env = fake_env(tmp_path)
    env.pop("KFORGE_ASSUME_GPU")
    out, r = optimize(tmp_path, env, "heuristic")
    if os.path.exists("/dev/nvidia0"):
        pytest.skip("this machine has a GPU")
    assert r.returncode == 2 and "GPU" in r.stderr  # --device cuda without a GPU is refused
    r = subprocess.run([KFORGE, "optimize", RELU, "--policy", "heuristic", "--out", str(out), "--json"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    agent = json.loads(r.stdout)["agent"]
    assert agent["predicted"] is True and agent["evaluator"] == "cost model (predicted)"
    assert "candidates_built" not in agent and not (out / "agent").exists()
    assert requests(log) == []


def built_with_torch():
    r = subprocess.run([KFORGE, "train", "--stage", "warmup", "--out", "/nonexistent-kforge-probe/x", "--tasks",
                        "/nonexistent"], capture_output=True, text=True)
    return "without libtorch" not in r.stderr


def test_training_episodes_are_judged_on_the_gpu_when_asked(tmp_path):
    if not built_with_torch():
        pytest.skip("kforge was built without libtorch")
    log, env = fake_env(tmp_path)
    run = tmp_path / "run"
    tasks = [RELU, os.path.join(LEVEL1, "20_LeakyReLU.py")]  # one to train on, one held out
    args = [KFORGE, "train", "--stage", "warmup", "--tasks", *tasks, "--out", str(run)]
    r = subprocess.run(args + ["--device", "cuda"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "evaluator: GPU harness (measured)" in r.stderr and "GPU harness (measured)" in r.stdout
    assert json.loads((run / "train.json").read_text())["device"] == "cuda"
    seen = requests(log)
    assert seen and all(q["verify"] and q["profile"] for q in seen)
    # Every plan of the warm-up evaluated the one training task's only schedule: built once, measured each time.
    built = [p for p in (run / "candidates").glob("*/*") if p.is_dir()]
    assert len(built) == 1 and len(seen) > 1
    assert {os.path.realpath(q["candidate"]) for q in seen} == {os.path.realpath(built[0] / "model_new.py")}
    # Continuing the run on another device is refused: its rewards would mix measurements and predictions.
    r = subprocess.run(args + ["--device", "cpu", "--resume"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 2 and "device" in r.stderr
