"""The action space's version (issue #29): `kforge catalogue`, the version explore logs carry, the checks
before `kforge train --replay` and `explore --resume`, and `kforge explore --reuse` re-exploring only the
problems whose reachable programs changed (on the CPU: the cost model, and a stand-in GPU harness)."""
import json
import os
import subprocess

import pytest

from test_explore import FAKE_HARNESS, GEMM, KFORGE, RELU, SWISH, built_with_torch, kforge

pytestmark = pytest.mark.skipif(not all(os.path.exists(p) for p in (RELU, GEMM, SWISH)),
                                reason="needs ../shared/kernelbench")


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def fnv1a_128(text):
    """base/files.h content_hash, to write a header of another catalogue with a valid fingerprint."""
    h = 0x6c62272e07bb014262b821756295c58d
    prime = (1 << 88) | 0x13b
    for c in text.encode():
        h = ((h ^ c) * prime) % (1 << 128)
    return "%032x" % h


def fingerprint(v):
    text = "kforge.action_space/1\n"
    for what in ("skills", "strategies", "knobs"):
        text += what + "".join(" " + n for n in v[what]) + "\n"
    text += "features %d %d %d\n" % (v["state_dim"], v["action_dim"], v["max_skills"])
    return fnv1a_128(text)[:12]


def current():
    r = kforge("catalogue", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_catalogue_names_the_skills_in_order_and_a_stable_fingerprint():
    v = current()
    names = kforge("skills", "--names").stdout.split()
    assert v["skills"] == names and len(names) > 10
    assert "cublas_gemm" in v["strategies"] and "block" in v["knobs"]
    assert v["state_dim"] > 0 and v["action_dim"] > v["max_skills"] >= len(names)
    assert fingerprint(v) == v["fingerprint"] and current()["fingerprint"] == v["fingerprint"]
    text = kforge("catalogue").stdout
    assert text.startswith("action space " + v["fingerprint"]) and "%d skills" % len(names) in text


def older_catalogue_header(drop_skill):
    """The header of a catalogue that lacked `drop_skill` (as before it was added)."""
    v = current()
    v["skills"] = [s for s in v["skills"] if s != drop_skill]
    v["fingerprint"] = fingerprint(v)
    return {"action_space": v}


def write_lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_logs_carry_the_catalogue_and_a_stale_log_is_refused_before_training(tmp_path):
    log = tmp_path / "log.jsonl"
    r = kforge("explore", RELU, GEMM, "--device", "cpu", "--record", str(log))
    assert r.returncode == 0, r.stderr
    rows = lines(log)
    assert rows[0]["action_space"] == current()
    ok = kforge("catalogue", "--check", str(log))
    assert ok.returncode == 0 and "ok: " in ok.stderr

    # Written before logs carried the version: unknown, and the refresh command is named.
    unknown = tmp_path / "unknown.jsonl"
    write_lines(unknown, rows[1:])
    r = kforge("catalogue", "--check", str(unknown))
    assert r.returncode == 1, r.stderr
    assert "action space unknown" in r.stderr and current()["fingerprint"] in r.stderr
    assert "--reuse " + str(unknown) in r.stderr and "EXPLORE_REUSE=" in r.stderr
    # Another catalogue: both versions, and what changed.
    older = tmp_path / "older.jsonl"
    write_lines(older, [older_catalogue_header("tf32_contractions")] + rows[1:])
    r = kforge("catalogue", "--check", str(older))
    assert r.returncode == 1 and "skills added: tf32_contractions" in r.stderr, r.stderr
    assert older_catalogue_header("tf32_contractions")["action_space"]["fingerprint"] in r.stderr
    # A hand-edited header (lists that do not hash to its fingerprint) is an error, not a version.
    edited = tmp_path / "edited.jsonl"
    bad = older_catalogue_header("tf32_contractions")
    bad["action_space"]["fingerprint"] = current()["fingerprint"]
    write_lines(edited, [bad] + rows[1:])
    r = kforge("catalogue", "--check", str(edited))
    assert r.returncode == 2 and "does not match its own lists" in r.stderr

    # --resume goes on only with the catalogue the log began with.
    r = kforge("explore", RELU, GEMM, "--device", "cpu", "--record", str(older), "--resume")
    assert r.returncode == 2 and "--reuse " + str(older) in r.stderr and "skills added" in r.stderr

    if not built_with_torch():
        return
    # train --replay refuses a stale log before training: no run directory is made.
    run = tmp_path / "run"
    r = kforge("train", "--preset", "ci", "--out", str(run), "--eval-tasks", RELU, GEMM, "--replay", str(older))
    assert r.returncode == 2, r.stderr[-2000:]
    assert "--replay" in r.stderr and "skills added: tf32_contractions" in r.stderr and "--reuse" in r.stderr
    assert not run.exists()


def fake_gpu_env(tmp_path):
    fake = tmp_path / "fake_harness.py"
    fake.write_text(FAKE_HARNESS)
    fake.chmod(0o755)
    return dict(os.environ, KFORGE_ASSUME_GPU="1", KFORGE_HARNESS_PYTHON=str(fake), KFORGE_SANDBOX="none",
                FAKE_LOG=str(tmp_path / "requests.jsonl"))


def test_reuse_explores_again_only_the_problems_whose_programs_changed(tmp_path):
    env = fake_gpu_env(tmp_path)
    requests = tmp_path / "requests.jsonl"

    def explore(*extra):
        return subprocess.run([KFORGE, "explore", RELU, GEMM, "--device", "cuda", "--no-compile", "--out",
                               str(tmp_path / "cands"), *extra], capture_output=True, text=True, env=env, timeout=600)

    full = tmp_path / "full.jsonl"
    r = explore("--record", str(full))
    assert r.returncode == 0, r.stderr
    assert len(lines(requests)) == 7  # ReLU 1 program, the GEMM 6
    rows = lines(full)
    # An older log: another catalogue, whose skills did not reach one of the GEMM's programs.
    gemm = [x for x in rows if x.get("task") == "99_Matmul_GELU_Softmax"]
    old = tmp_path / "old.jsonl"
    write_lines(old, [older_catalogue_header("tf32_contractions")] + [x for x in rows[1:] if x is not gemm[-1]])

    # --dry-run names the problem to explore and writes nothing.
    requests.unlink()
    new = tmp_path / "new.jsonl"
    r = explore("--record", str(new), "--reuse", str(old), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "1 problems would be reused, 1 explored (6 programs)" in r.stdout
    assert "explore 99_Matmul_GELU_Softmax (6 programs)" in r.stdout
    assert "explore 19_ReLU" not in r.stdout
    assert not new.exists() and not requests.exists()

    # The run: ReLU copied (nothing measured), the GEMM measured again whole (its 6 programs).
    r = explore("--record", str(new), "--reuse", str(old))
    assert r.returncode == 0, r.stderr
    assert "1 reused unchanged from" in r.stdout
    reqs = lines(requests)
    assert len(reqs) == 6 and all("99_Matmul_GELU_Softmax" in q["candidate"] for q in reqs)
    out = lines(new)
    assert out[0]["action_space"] == current()
    done = {x["task_done"]: x for x in out if "task_done" in x}
    assert done["19_ReLU"]["reused_from"] == str(old) and "reused_from" not in done["99_Matmul_GELU_Softmax"]
    relu_old = [x for x in rows if x.get("task") == "19_ReLU"]
    assert [x for x in out if x.get("task") == "19_ReLU"] == relu_old  # copied as they were
    assert len([x for x in out if x.get("task") == "99_Matmul_GELU_Softmax"]) == 6
    assert kforge("catalogue", "--check", str(new)).returncode == 0

    # A log that holds everything: nothing to explore, nothing measured.
    requests.unlink()
    again = tmp_path / "again.jsonl"
    r = explore("--record", str(again), "--reuse", str(new))
    assert r.returncode == 0, r.stderr
    assert not requests.exists() and "2 reused unchanged" in r.stdout
    assert r.stderr.count("to explore:") == 1 and "0 to explore" in r.stderr

    bad = explore("--record", str(tmp_path / "x.jsonl"), "--dry-run")
    assert bad.returncode == 2 and "give --reuse" in bad.stderr
    same = explore("--record", str(new), "--reuse", str(new), "--resume")
    assert same.returncode == 2 and "is the --record log" in same.stderr


def test_reuse_on_the_cost_model(tmp_path):
    log = tmp_path / "log.jsonl"
    assert kforge("explore", RELU, GEMM, "--device", "cpu", "--record", str(log)).returncode == 0
    rows = lines(log)
    old = tmp_path / "old.jsonl"
    write_lines(old, rows[1:])  # no version: unknown
    new = tmp_path / "new.jsonl"
    r = kforge("explore", RELU, GEMM, SWISH, "--device", "cpu", "--record", str(new), "--reuse", str(old))
    assert r.returncode == 0, r.stderr
    # Both problems covered are copied; SWISH, never explored, is explored.
    assert "2 problems reused" in r.stderr and "to explore: 25_Swish" in r.stderr
    done = {x["task_done"]: x for x in lines(new) if "task_done" in x}
    assert set(done) == {"19_ReLU", "99_Matmul_GELU_Softmax", "25_Swish"}
    assert "reused_from" in done["19_ReLU"] and "reused_from" not in done["25_Swish"]
