"""kforge agent end to end on the CPU (label llm): a real HTTP server process replays recorded tool-call
scripts; kforge agent runs its loop against it with the real tools, the real hash check and kforge's real
static checks. Only the GPU step of verify/profile is scripted (testing.ScriptedHarness, marked in every
record); tests/gpu/test_llm_agent_gpu.py runs the same scripts with the real harness."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (BAD_CU, GOOD_CU, HARNESS, RELU, REPO, Server, call, kforge_bin, load_events, model_new,
                      run_agent, turn)

sys.path.insert(0, str(REPO / "python"))
from kforge.llm_agent import convert, rewards, trajectory  # noqa: E402

SCHEMA = json.loads((REPO / "python/kforge/llm_agent/trajectory.schema.json").read_text())


def validate(out):
    import jsonschema
    v = jsonschema.Draft202012Validator(SCHEMA)
    for e in load_events(out):
        errs = [x.message for x in v.iter_errors(e)]
        assert not errs, (e["type"], errs)


def end_of(out):
    return [e for e in load_events(out) if e["type"] == "episode_end"][-1]


def evaluations(out):
    return [e for e in load_events(out) if e["type"] == "evaluation"]


def test_correct_solution(tmp_path):
    steps = [turn(call("read", path="SKILL.md"), content="Reading the rules."),
             turn(call("write", path="kernels/relu.cu", content=GOOD_CU)),
             turn(call("compile")),
             turn(call("write", path="model_new.py", content=model_new("RELU_GOOD"))),
             turn(call("verify"), call("profile")),
             {"content": "Done: ReLU kernel, 2x faster than eager.", "logprobs": True}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps, "expect_key": "sk-test-SECRET-123"}) as s:
        p = run_agent(s.url, out, harness=HARNESS, env={"OPENAI_API_KEY": "sk-test-SECRET-123"})
        reqs = s.requests()
    end = end_of(out)
    assert end["reward"] == 3 and end["stop_reason"] == "model_stopped" and end["turns"] == 6, end
    assert end["best"]["scripted_harness"] is True
    assert (out / "best" / "model_new.py").read_text() == model_new("RELU_GOOD")
    ev = load_events(out)
    tools = [e["tool"] for e in ev if e["type"] == "message" and e.get("tool")]
    assert [t["tool"] for t in tools] == ["read", "write", "compile", "write", "verify", "profile"]
    assert tools[2]["outcome"] == "compiled"  # real nvcc, on the CPU
    assert [e["reward"] for e in evaluations(out)] == [1, 3]
    header = ev[0]
    assert header["type"] == "header" and header["scripted_harness"] is True and len(header["protected"]) == 5
    last = [e for e in ev if e["type"] == "message" and e["message"]["role"] == "assistant"][-1]
    assert last["llm"]["token_ids"] == [1, 2, 3] and last["llm"]["logprobs"]["content"][0]["logprob"] == -0.25
    # the key went to the server, and nowhere else
    assert all(r["auth_ok"] for r in reqs)
    for f in out.rglob("*"):
        if f.is_file():
            assert b"SECRET-123" not in f.read_bytes(), f
    validate(out)
    # converters and filters
    conv = tmp_path / "sft.jsonl"
    subprocess.run([kforge_bin(), "agent", "convert", str(out / "trajectory.jsonl"), "-o", str(conv), "--rft"],
                   check=True, capture_output=True)
    rows = [json.loads(l) for l in conv.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["reward"] == 3
    msgs = rows[0]["messages"]
    assert [m["role"] for m in msgs[:3]] == ["system", "user", "assistant"]
    assert msgs[2]["tool_calls"][0]["function"]["name"] == "read" and msgs[3]["role"] == "tool"
    assert msgs[3]["tool_call_id"] == msgs[2]["tool_calls"][0]["id"]
    assert {t["function"]["name"] for t in rows[0]["tools"]} >= {"shell", "verify", "kforge_apply_skill"}
    assert "reward 3" in p.stdout


def test_compile_error_then_fix(tmp_path):
    steps = [turn(call("write", path="kernels/relu.cu", content=BAD_CU)),
             turn(call("compile")),
             turn(call("edit", path="kernels/relu.cu", old_string="y[i] = x[i ", new_string="y[i] = x[i] ")),
             turn(call("compile")),
             turn(call("write", path="model_new.py", content=model_new("RELU_GOOD"))),
             turn(call("verify")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, harness=HARNESS)
    ev = load_events(out)
    tools = [e for e in ev if e["type"] == "message" and e.get("tool")]
    assert [t["tool"].get("outcome") for t in tools if t["tool"]["tool"] == "compile"] == ["compile_error", "compiled"]
    assert "error" in tools[1]["message"]["content"]  # nvcc's words reach the model
    end = end_of(out)
    assert end["reward"] == 1  # verified, never profiled
    validate(out)


def test_wrong_answer_then_fix(tmp_path):
    steps = [turn(call("write", path="model_new.py", content=model_new("RELU_WRONG"))),
             turn(call("verify")),
             turn(call("edit", path="model_new.py", old_string="# RELU_WRONG", new_string="# RELU_SLOWER_THAN_COMPILE")),
             turn(call("profile")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, harness=HARNESS)
    assert [(e["result"]["outcome"], e["reward"]) for e in evaluations(out)] == [("wrong_answer", -1), ("ok", 2)]
    assert end_of(out)["reward"] == 2
    validate(out)


def fixtures():
    out = []
    for f in sorted((REPO / "tests" / "threats").iterdir()):
        if f.name == "problem_relu.py" or f.suffix not in (".py", ".cu"):
            continue
        head = dict(l.lstrip("#/ ").split(":", 1) for l in f.read_text().splitlines()[:3] if ":" in l)
        out.append((f, head.get("layer", "").strip(), head.get("expect", "").strip()))
    return out


@pytest.mark.parametrize("fixture,layer,expect", fixtures(), ids=[f[0].name for f in fixtures()])
def test_threat_fixture_scores_minus_one(tmp_path, fixture, layer, expect):
    """A scripted model hands in each threat fixture. Static fixtures: the scripted harness would call them
    correct and fast (reward 3), so the -1 comes from kforge's static checks. Runtime fixtures: on this
    machine nothing can be verified (no GPU): -1 because nothing was; tests/gpu runs them on the harness."""
    if expect == "ok":
        pytest.skip("a control fixture (must pass), not a threat")
    text = fixture.read_text()
    if fixture.suffix == ".cu":
        calls = [call("write", path="kernels/" + fixture.name, content=text),
                 call("write", path="model_new.py", content=model_new("RELU_GOOD"))]
    else:
        calls = [call("write", path="model_new.py", content=text)]
    steps = [turn(*calls), turn(call("verify")), turn(call("profile")), {"content": "done"}]
    out = tmp_path / "run"
    static = layer == "static"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, harness=HARNESS if static else None)
    end = end_of(out)
    assert end["reward"] == -1, end
    outcomes = [e["result"]["outcome"] for e in evaluations(out)]
    assert outcomes == (["forbidden", "forbidden"] if static else outcomes) and end["best"] is None
    if not static:
        assert set(outcomes) <= {"forbidden", "no_gpu"}


def test_escaped_stream_is_not_a_result(tmp_path):
    """The harness's timing-integrity flag (work off the timed stream) makes a fast 'ok' a forbidden -1."""
    steps = [turn(call("write", path="model_new.py", content=model_new("RELU_ESCAPED"))), turn(call("profile")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, harness=HARNESS)
    r = evaluations(out)[0]["result"]
    assert r["outcome"] == "forbidden" and r["harness_outcome"] == "ok" and r["reward"] == -1
    assert end_of(out)["reward"] == -1


def test_tampering_with_protected_files(tmp_path):
    """With the shell unsandboxed (no bubblewrap) and root's rights, the model rewrites the evaluator: the
    hash check catches it at the next verify and the episode ends with -1."""
    steps = [turn(call("write", path="model.py", content="x = 1\n")),  # refused by the tool
             turn(call("write", path="../evaluator/verify.py", content="print('ok')\n")),  # refused
             turn(call("write", path="model_new.py", content=model_new("RELU_GOOD"))),
             turn(call("profile")),
             turn(call("shell", command="chmod u+w ../evaluator ../evaluator/verify.py; "
                                        "echo 'print(\"reward 3\")' > ../evaluator/verify.py")),
             turn(call("verify")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, "--no-bwrap", harness=HARNESS)
    ev = load_events(out)
    tool_msgs = [e["message"]["content"] for e in ev if e["type"] == "message" and e.get("tool")]
    assert "protected" in tool_msgs[0] and "outside the workspace" in tool_msgs[1]
    end = end_of(out)
    if os.geteuid() == 0:
        assert end["stop_reason"] == "tampered" and end["reward"] == -1 and end["tampered"]
        assert evaluations(out)[-1]["result"]["tampered"] is True
    else:
        assert end["reward"] == 3  # the write failed: nothing was tampered with
    validate(out)


def test_shell_is_sandboxed(tmp_path):
    if not shutil.which("bwrap"):
        pytest.skip("no bubblewrap here")
    steps = [turn(call("shell", command="echo hi > ../evaluator/x; echo rc=$?; echo more >> model.py; echo rc=$?; "
                                        "env | grep -c SECRET; echo ok > kernels/t.txt")),
             turn(call("shell", command="python3 ../evaluator/verify.py")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, env={"MY_SECRET_TOKEN": "hunter2"})
    res = [e["message"]["content"] for e in load_events(out) if e["type"] == "message" and e.get("tool")][0]
    assert res.count("rc=1") == 2 and "\n0\n" in res, res
    assert (out / "workspace" / "kernels" / "t.txt").read_text() == "ok\n"
    assert load_events(out)[0]["isolation"].startswith("bubblewrap")
    # the evaluator's entry point runs inside the sandbox, with kforge's static checks (no GPU here: no_gpu)
    res2 = [e["message"]["content"] for e in load_events(out) if e["type"] == "message" and e.get("tool")][1]
    assert '"outcome": "no_gpu"' in res2 or '"outcome": "ok"' in res2, res2


def test_malformed_tool_calls(tmp_path):
    steps = [turn({"name": "write", "raw": "{\"path\": \"model_new.py\", \"content\": "}),  # torn JSON
             turn(call("rm_everything", path="/")),  # no such tool
             turn(call("edit", path="model_new.py")),  # missing arguments
             turn(call("write", path="model_new.py", content=model_new("RELU_GOOD"))),
             turn(call("profile")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, harness=HARNESS)
    end = end_of(out)
    assert end["invalid_tool_calls"] == 3 and end["reward"] == 3
    msgs = [e["message"]["content"] for e in load_events(out) if e["type"] == "message" and e.get("tool")]
    assert "not valid JSON" in msgs[0] and "no tool named" in msgs[1] and "missing arguments" in msgs[2]
    kept, dropped = convert.rft_filter([convert.episode(str(out / "trajectory.jsonl"))])
    assert not kept and "invalid tool calls" in dropped[0][1]
    validate(out)


def test_server_errors_and_timeouts(tmp_path):
    steps = [{"http_error": 503}, {"http_error": 429, "retry_after": 0}, {"sleep": 7}, {"http_error": 502},
             {"raw_body": "<html>bad gateway</html>"}, {"raw_body": "{\"choices\": []}"},
             turn(call("write", path="model_new.py", content=model_new("RELU_GOOD"))),
             turn(call("verify")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, harness=HARNESS)
    ev = load_events(out)
    retries = [e for e in ev if e["type"] == "retry"]
    assert [r.get("status") for r in retries] == [503, 429, None, 502, 200, 200], retries
    assert "timed out" in retries[2]["error"] and "not JSON" in retries[4]["error"] and "no choices" in retries[5]["error"]
    assert end_of(out)["reward"] == 1
    first = [e for e in ev if e["type"] == "message" and e.get("llm")][0]
    assert first["llm"]["attempts"] == 7
    validate(out)


def test_fatal_server_error_ends_episode(tmp_path):
    steps = [{"http_error": 401}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out)
    end = end_of(out)
    assert end["stop_reason"] == "llm_error" and end["reward"] == -1 and end["turns"] == 0


def test_retries_exhausted(tmp_path):
    steps = [{"http_error": 500}] * 4
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, "--max-retries", "2")
    assert end_of(out)["stop_reason"] == "llm_error"
    assert len([e for e in load_events(out) if e["type"] == "retry"]) == 2


def test_context_overflow(tmp_path):
    """The server refuses requests past 50k characters; the loop compacts its context and goes on. A small
    --context-tokens also triggers compaction before the server has to refuse."""
    big = "x" * 20000
    steps = [turn(call("write", path="kernels/notes.txt", content=big))]
    steps += [turn(call("read", path="kernels/notes.txt")) for _ in range(4)]
    steps += [turn(call("write", path="model_new.py", content=model_new("RELU_GOOD"))), turn(call("verify")),
              {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps, "context_limit_chars": 50000}) as s:
        run_agent(s.url, out, harness=HARNESS)
        over = [r for r in s.requests() if r["over_limit"]]
    ev = load_events(out)
    comps = [e for e in ev if e["type"] == "compaction"]
    assert over and comps and any(c["forced"] for c in comps)
    assert [e for e in ev if e["type"] == "llm_error"][0]["action"] == "compact"
    assert end_of(out)["reward"] == 1 and end_of(out)["stop_reason"] == "model_stopped"
    # budget-driven compaction, no refusal needed
    out2 = tmp_path / "run2"
    with Server(tmp_path, {"steps": steps, "context_limit_chars": 50000}, name="s2") as s:
        run_agent(s.url, out2, "--context-tokens", "12000", "--max-response-tokens", "1000", harness=HARNESS)
        assert not [r for r in s.requests() if r["over_limit"]]
    comps = [e for e in load_events(out2) if e["type"] == "compaction"]
    assert comps and not any(c["forced"] for c in comps)
    assert all(c["tokens_after"] < c["tokens_before"] for c in comps)
    assert end_of(out2)["reward"] == 1
    # the converter keeps every message, compactions notwithstanding
    ep = convert.episode(str(out2 / "trajectory.jsonl"))
    assert len(convert.to_openai_messages(ep)["messages"]) == 2 + 2 * 7 + 1
    validate(out2)


def test_turn_budget_and_redundant_loop(tmp_path):
    steps = [turn(call("write", path="model_new.py", content=model_new("RELU_GOOD"))), turn(call("verify"))]
    steps += [turn(call("glob", pattern="kernels/*"))] * 5
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, "--max-turns", "6", harness=HARNESS)
    end = end_of(out)
    assert end["stop_reason"] == "max_turns" and end["turns"] == 6 and end["reward"] == 1
    kept, dropped = convert.rft_filter([convert.episode(str(out / "trajectory.jsonl"))])
    assert not kept and "redundant loop" in dropped[0][1]


def test_token_and_time_budgets(tmp_path):
    steps = [turn(call("glob", pattern="*"))] * 4 + [{"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, "--max-total-tokens", "1", harness=HARNESS)
    end = end_of(out)
    assert end["stop_reason"] == "max_total_tokens" and end["turns"] == 1 and end["reward"] == -1
    out2 = tmp_path / "run2"
    with Server(tmp_path, {"steps": steps}, name="s2") as s:
        run_agent(s.url, out2, "--time-limit", "0.000001", harness=HARNESS)
    assert end_of(out2)["stop_reason"] == "time_limit" and end_of(out2)["turns"] == 0


def test_resume_after_kill(tmp_path):
    """kill -9 while the server holds a request; the torn file resumes; the episode ends as if whole."""
    first = [turn(call("write", path="model_new.py", content=model_new("RELU_WRONG"))), turn(call("verify")),
             {"sleep": 60}]
    rest = [turn(call("edit", path="model_new.py", old_string="# RELU_WRONG", new_string="# RELU_GOOD")),
            turn(call("profile")), {"content": "done"}]
    out = tmp_path / "run"
    hp = tmp_path / "h.json"
    hp.write_text(json.dumps(HARNESS))
    with Server(tmp_path, {"steps": first}) as s:
        argv = [kforge_bin(), "agent", str(RELU), "--llm", s.url, "--model", "m", "--out", str(out),
                "--request-timeout", "120", "--test-harness-script", str(hp)]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline:
            if len([r for r in s.requests()]) >= 3:
                break
            time.sleep(0.2)
        time.sleep(0.5)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    traj = out / "trajectory.jsonl"
    n_before = len(load_events(out))
    with open(traj, "a") as f:
        f.write('{"schema": "kforge.llm_trajectory/1", "type": "mess')  # a torn line
    with Server(tmp_path, {"steps": rest}, name="again") as s:
        run_agent(s.url, out, "--resume", harness=HARNESS)
    ev = load_events(out)
    assert [e["seq"] for e in ev] == list(range(len(ev)))
    assert ev[n_before]["type"] == "resume" and ev[n_before]["at_turn"] == 2
    end = end_of(out)
    assert end["reward"] == 3 and end["turns"] == 5
    assert [e["reward"] for e in evaluations(out)] == [-1, 3]
    validate(out)
    # a finished run is not run again
    with Server(tmp_path, {"steps": []}, name="third") as s:
        run_agent(s.url, out, "--resume", harness=HARNESS)
        assert s.requests() == []


def test_kforge_skill_tools(tmp_path):
    """The model starts from kforge's own program through kforge's tools."""
    steps = [turn(call("kforge_import"), call("kforge_plan", start="first"), call("kforge_skill_sites")),
             turn(call("kforge_apply_skill", skill="no_such_skill", site=0)),
             turn(call("kforge_plan"), call("kforge_export")),
             turn(call("verify")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, harness=HARNESS)
    msgs = [e for e in load_events(out) if e["type"] == "message" and e.get("tool")]
    assert '"ops"' in msgs[0]["message"]["content"] or '"nodes"' in msgs[0]["message"]["content"]
    assert msgs[2]["message"]["content"].lstrip().startswith("[")  # the sites, as JSON
    assert "no skill named" in msgs[3]["message"]["content"]
    assert "kforge ModelNew" in (out / "workspace" / "model_new.py").read_text()
    assert evaluations(out)[0]["result"]["outcome"] == "ok"  # kforge's program passes the static checks
    assert end_of(out)["reward"] == 1  # verified (scripted), not profiled


def test_export_cuda_agent_layout(tmp_path):
    d = tmp_path / "exp"
    subprocess.run([kforge_bin(), "export", str(RELU), "--format", "cuda-agent", "-o", str(d)], check=True,
                   capture_output=True)
    for rel in ("workspace/SKILL.md", "workspace/model.py", "workspace/model_new.py", "workspace/kernels",
                "evaluator/verify.py", "evaluator/profile.py", "evaluator/compile.py", "evaluator/MANIFEST.json"):
        assert (d / rel).exists(), rel
    assert (d / "workspace/model.py").read_text() == RELU.read_text()
    assert "Protocol in force: cuda-agent" in (d / "workspace/SKILL.md").read_text()
    r = subprocess.run([sys.executable, str(d / "evaluator/verify.py")], capture_output=True, text=True)
    res = json.loads(r.stdout)
    assert res["outcome"] in ("no_gpu", "ok"), res
    assert not os.access(d / "evaluator/verify.py", os.W_OK) or os.geteuid() == 0


def test_suite_table(tmp_path):
    suite = tmp_path / "suite" / "level1"
    suite.mkdir(parents=True)
    shutil.copy(RELU, suite / "1_relu.py")
    shutil.copy(RELU, suite / "2_relu.py")
    steps = [turn(call("write", path="model_new.py", content=model_new("RELU_GOOD"))), turn(call("profile")),
             {"content": "done"},
             turn(call("write", path="model_new.py", content=model_new("RELU_WRONG"))), turn(call("verify")),
             {"content": "done"}]
    hp = tmp_path / "h.json"
    hp.write_text(json.dumps(HARNESS))
    with Server(tmp_path, {"steps": steps}) as s:
        p = subprocess.run([kforge_bin(), "agent", "--suite", str(tmp_path / "suite"), "--llm", s.url, "--model", "m",
                            "--out", str(tmp_path / "out"), "--test-harness-script", str(hp)],
                           capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "out" / "suite.json").read_text())
    s0 = doc["summaries"][0]
    assert s0["problems"] == 2 and s0["pass"] == 0.5 and s0["faster_than_compile"] == 0.5
    assert abs(s0["geomean_speedup_vs_eager"] - 2.0) < 1e-9 and s0["mean_turns"] == 3
    assert "faster_than_eager" in p.stdout and "scripted harness" in p.stdout
    # kforge's own compiler beside it, from a `kforge bench --json` report of the same problems
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"format": "kforge.bench/1", "predicted": False, "problems": [
        {"level": "level1", "problem": "1_relu", "correct": True, "t_candidate_ms": 0.8, "t_eager_ms": 1.0,
         "t_compile_ms": 0.9},
        {"level": "level1", "problem": "2_relu", "correct": True, "t_candidate_ms": 1.0, "t_eager_ms": 1.0,
         "t_compile_ms": 0.9},
        {"level": "level1", "problem": "3_other", "correct": True, "t_candidate_ms": 1.0, "t_eager_ms": 1.0}]}))
    p = subprocess.run([kforge_bin(), "agent", "report", str(tmp_path / "out"), "--compare-bench", str(bench)],
                       capture_output=True, text=True, check=True)
    doc = json.loads((tmp_path / "out" / "suite.json").read_text())
    k = doc["summaries"][1]
    assert k["who"].startswith("kforge") and k["problems"] == 2 and k["pass"] == 1.0 and k["faster_than_eager"] == 0.5
    assert doc["summaries"][0] == s0
    v = subprocess.run([kforge_bin(), "agent", "validate", str(tmp_path / "out/level1/1_relu/trajectory.jsonl")],
                       capture_output=True, text=True)
    assert v.returncode == 0 and "valid" in v.stdout, v.stdout + v.stderr


def test_milestone_mirror_matches_kforge():
    # the C++ rule (sandbox::milestone_reward_of_times): 5 % margins, -1 for any failure
    table = [({"outcome": "wrong_answer"}, -1), ({"outcome": "ok"}, 1),
             ({"outcome": "ok", "t_candidate": 1.0, "t_eager": 1.0, "t_compile": 2.0}, 1),
             ({"outcome": "ok", "t_candidate": 0.9, "t_eager": 1.0, "t_compile": 0.5}, 2),
             ({"outcome": "ok", "t_candidate": 0.94, "t_eager": 1.0, "t_compile": 1.0}, 3),
             ({"outcome": "ok", "t_candidate": 0.96, "t_eager": 1.0, "t_compile": 1.0}, 1)]
    for r, want in table:
        assert rewards.milestone_reward_of_times(r) == want, r
    assert rewards.result_reward({"outcome": "no_gpu", "verified": False}) is None
    assert rewards.result_reward({"outcome": "forbidden"}) == -1


def test_torn_trajectory_loads(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"a": 1}\n{"b": 2}\n{"c": ')
    assert trajectory.load(str(p)) == [{"a": 1}, {"b": 2}]
    trajectory.load(str(p), repair=True)
    assert p.read_text() == '{"a": 1}\n{"b": 2}\n'


def test_convert_cut_episode_and_parquet(tmp_path):
    """The converter without the binary: an episode cut by its budget after the model's calls loses the
    unanswered tool results; -o FILE.parquet writes Parquet where pyarrow is, else says what is missing.
    tests/llm/test_trainer_loaders.py loads both outputs with veRL's and OpenRLHF's own datasets."""
    p = tmp_path / "trajectory.jsonl"
    w = trajectory.TrajectoryWriter(str(p))
    w.write("header", problem_name="relu", tools=[{"type": "function", "function": {"name": "glob"}}])
    call_ = {"id": "c1", "type": "function", "function": {"name": "glob", "arguments": '{"pattern": "*"}'}}
    for m in [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
              {"role": "assistant", "content": None, "tool_calls": [call_]},
              {"role": "tool", "tool_call_id": "c1", "content": "model.py"},
              {"role": "assistant", "content": "again", "tool_calls": [dict(call_, id="c2")]},
              {"role": "tool", "tool_call_id": "c2", "content": "model.py"}]:
        w.write("message", message=m, turn=0)
    w.write("episode_end", stop_reason="max_turns", reward=-1, turns=2)
    w.close()
    row = convert.to_openai_messages(convert.episode(str(p)))
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert row["messages"][2]["content"] == "" and row["meta"]["trailing_dropped"] == 1
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    out = tmp_path / "sft.parquet"
    r = subprocess.run([sys.executable, "-m", "kforge.llm_agent", "convert", str(p), "-o", str(out)],
                       capture_output=True, text=True, env=env)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert r.returncode == 2 and "needs pyarrow" in r.stderr and not out.exists(), r.stdout + r.stderr
        return
    assert r.returncode == 0, r.stdout + r.stderr
    back = pq.read_table(str(out)).to_pylist()
    assert len(back) == 1 and back[0]["messages"][4]["tool_calls"][0]["function"] == call_["function"]
    assert back[0]["tools"] == row["tools"] and back[0]["reward"] == -1


def test_skill_tools_on_a_level2_problem(tmp_path):
    """From the first schedule, the model applies one of kforge's skills itself, then exports and verifies."""
    problem = Path(os.environ.get("KFORGE_KERNELBENCH", "/work/shared/kernelbench")) / "level2" / \
        "11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm.py"
    if not problem.exists():
        pytest.skip("no shared kernelbench level2 here")
    steps = [turn(call("kforge_plan", start="first"), call("kforge_skill_sites")),
             turn(call("kforge_apply_skill", skill="batch_norm_inference", site=0)),
             turn(call("kforge_skill_sites"), call("kforge_export")),
             turn(call("verify")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, harness=HARNESS, problem=problem)
    msgs = [e["message"]["content"] for e in load_events(out) if e["type"] == "message" and e.get("tool")]
    before, after = json.loads(msgs[1]), json.loads(msgs[3])
    assert any(x["skill"] == "batch_norm_inference" for x in before)
    assert not any(x["skill"] == "batch_norm_inference" for x in after)
    assert "applied batch_norm_inference site 0" in msgs[2]
    sched = json.loads((out / "workspace/kforge/schedule.json").read_text())
    assert "batch_norm_inference" in json.dumps(sched)
    assert evaluations(out)[0]["result"]["outcome"] == "ok"


def test_user_errors_of_the_new_commands(tmp_path):
    k = kforge_bin()
    r = subprocess.run([k, "export", str(RELU), "--format", "cuda-agent"], capture_output=True, text=True)
    assert r.returncode == 2 and "give -o DIR" in r.stderr
    r = subprocess.run([k, "skills", "apply", str(RELU), "--skill", "fuse_elementwise", "--site", "7"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "sites on this schedule" in r.stderr
    r = subprocess.run([k, "agent", str(RELU)], capture_output=True, text=True)
    assert r.returncode == 2 and "--llm" in r.stderr
    r = subprocess.run([k, "agent", str(tmp_path / "nope.py"), "--llm", "http://127.0.0.1:9/v1", "--model", "m"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no such file" in r.stderr
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "trajectory.jsonl").write_text("")
    r = subprocess.run([k, "agent", str(RELU), "--llm", "http://127.0.0.1:9/v1", "--model", "m", "--out",
                        str(tmp_path / "run")], capture_output=True, text=True)
    assert r.returncode == 2 and "--resume" in r.stderr and "--force" in r.stderr
