"""What a worker does with a job: run the `kforge` binary (or kforge's Python checks) in a child process
and turn its JSON into the job's result. Untrusted code (a submitted ModelNew, a problem's model) runs
only in those children, never in the worker or the server.

Kinds:
  env     skill mode: `kforge env PROBLEM --actions ...` (reset, step, evaluate): the observation
  submit  LLM mode: a ModelNew file; measured on a GPU (`kforge evaluate`), else static checks only
  synth   a synthesized task: `kforge synth --count 1 --seed S` into the service's work directory
  build   warm the nvcc cache for a schedule before the GPU evaluates it (CPU actors; best effort)

A result is {"status": "ok", ...} or {"status": "bad_input" | "environment" | "fault", "message": ...};
failures are data, never an exception out of the worker.
"""

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PREDICTED_NOTE = ("predicted by kforge's roofline cost model on a machine without a GPU: times are estimates and "
                  "correctness is not established")
UNVERIFIED_NOTE = ("no GPU in the pool: only the static checks ran; correctness and times of this ModelNew are not "
                   "established, and it earns no reward")


def _die_with_parent():
    # The child dies with its worker (a killed actor leaves no kforge process behind).
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_child(argv, timeout, env=None):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                           preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout
    except OSError as e:
        return None, "", "cannot run %s: %s" % (argv[0], e)
    return p.returncode, p.stdout, p.stderr


def kforge_error(rc, stderr):
    lines = [l for l in stderr.strip().splitlines() if l.strip() and not l.startswith("Run with --help")]
    message = lines[-1] if lines else "kforge exited with %s" % rc
    if rc == 2:
        return {"status": "bad_input", "message": message}
    if rc == 3:
        return {"status": "environment", "message": message}
    return {"status": "fault", "message": message}


def run_env(cfg, p, work):
    argv = [cfg["kforge_bin"], "env", p["problem"], "--protocol", p["protocol"], "--device", p["device"],
            "--max-turns", str(p.get("max_turns", 150))]
    log = None
    if p.get("evlog") is not None:  # the session's evaluations so far: each program is measured once
        log = work / "evaluations.jsonl"
        log.write_text(p["evlog"])
        argv += ["--record", str(log)]
    if p.get("actions"):
        argv += ["--actions", ",".join(str(a) for a in p["actions"])]
    if p.get("last_edit"):
        argv.append("--last-edit")
    rc, out, err = run_child(argv, cfg["job_timeout_s"])
    if rc != 0:
        return kforge_error(rc, err)
    obs = json.loads(out.strip().splitlines()[-1])
    measured = bool(obs.get("measured"))
    res = {"status": "ok", "observation": obs, "measured": measured, "predicted": not measured,
           "note": None if measured else PREDICTED_NOTE}
    if log is not None:
        res["evlog"] = log.read_text()
    return res


def run_submit(cfg, p, work):
    cand = work / "model_new.py"
    cand.write_text(p["candidate"])
    if p["device"] == "cuda":
        argv = [cfg["kforge_bin"], "evaluate", p["problem"], str(cand), "--protocol", p["protocol"], "--json",
                "--timeout", str(int(cfg["job_timeout_s"]))]
        if not p.get("profile", True):
            argv.append("--no-profile")
        rc, out, err = run_child(argv, cfg["job_timeout_s"] + 60)
        if rc not in (0, 1):
            return kforge_error(rc, err)
        result = json.loads(out)
        reward = result.get("reward")
        return {"status": "ok", "result": result, "reward": reward, "measured": True, "predicted": False,
                "note": None}
    argv = [cfg["python"], "-m", "kforge.static_check", str(cand), "--reference", p["problem"]]
    env = dict(os.environ, PYTHONPATH=cfg["python_path"])
    rc, out, err = run_child(argv, 120, env)
    if rc != 0:
        return kforge_error(rc, err)
    findings = json.loads(out)
    outcome = "forbidden" if findings else "unverified"
    message = "; ".join("line %s: %s (%s)" % (f["line"], f["message"], f["rule"]) for f in findings)
    return {"status": "ok", "result": {"outcome": outcome, "findings": findings, "message": message or UNVERIFIED_NOTE,
                                       "predicted": True, "protocol": p["protocol"]},
            "reward": -1 if findings else None, "measured": False, "predicted": True, "note": UNVERIFIED_NOTE}


def run_synth(cfg, p):
    out = Path(p["out"])
    argv = [cfg["kforge_bin"], "synth", "--count", "1", "--seed", str(p["seed"]), "--out", str(out), "--json",
            "-j", "1", "--max-ops", str(p.get("max_ops", 3))]
    if out.exists():
        argv.append("--resume")
    rc, _, err = run_child(argv, cfg["job_timeout_s"])
    if rc != 0:
        return kforge_error(rc, err)
    rows = [json.loads(l) for l in (out / "index.jsonl").read_text().splitlines() if l.strip()]
    if not rows:
        return {"status": "fault", "message": "kforge synth accepted no task for seed %s" % p["seed"]}
    return {"status": "ok", "problem": str(out / rows[0]["file"]), "row": rows[0].get("name")}


def run_build(cfg, p, work):
    """The schedule the GPU job will evaluate (the actions replayed as edits on the cost model), built with nvcc
    into the build cache, so that the GPU's worker finds it built."""
    plan = run_env(cfg, dict(p, device="cpu", last_edit=True, evlog=None), work)
    if plan.get("status") != "ok":
        return plan
    sched = work / "schedule.json"
    sched.write_text(json.dumps(plan["observation"]["schedule"]))
    argv = [cfg["kforge_bin"], "build", p["problem"], "--schedule", str(sched), "--out", str(work / "build"),
            "--protocol", p["protocol"], "-j", "1"]
    rc, _, err = run_child(argv, cfg["job_timeout_s"])
    return {"status": "ok" if rc in (0, 1) else "fault", "message": err.strip()[-500:]}


def run_job(cfg, job):
    """The job's result (a dict). `cfg`: kforge_bin, python, python_path, work_dir, job_timeout_s,
    allow_test_delay."""
    p = job["payload"]
    delay = p.get("test_delay_s")
    if delay and cfg.get("allow_test_delay"):
        time.sleep(float(delay))  # fault-injection tests kill the worker inside this window
    work = Path(tempfile.mkdtemp(prefix="job-", dir=cfg["work_dir"]))
    kind = job["kind"]
    try:
        if kind == "env":
            return run_env(cfg, p, work)
        if kind == "submit":
            return run_submit(cfg, p, work)
        if kind == "synth":
            return run_synth(cfg, p)
        if kind == "build":
            return run_build(cfg, p, work)
        return {"status": "bad_input", "message": "unknown job kind %r" % kind}
    except (ValueError, KeyError, OSError) as e:
        return {"status": "fault", "message": "%s: %s" % (type(e).__name__, e)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    # Debugging aid: python -m kforge.service.jobs CFG.json JOB.json
    print(json.dumps(run_job(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))))
