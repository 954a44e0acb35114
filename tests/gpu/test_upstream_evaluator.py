"""Upstream KernelBench's evaluator in the GPU suite (#27 item 4): every problem of a level exported
as one ModelNew file (`kforge export --format kernelbench --allow-library-only`), judged by kforge's
harness (`kforge evaluate --no-profile`) and by upstream's own `eval_kernel_against_ref` with its strict
static checker (`kforge.upstream_eval`: a process per file, one at a time, so no GPU memory is
shared), and every disagreement on correctness listed with both sides' messages.

Opt-in, because a level takes about an hour (two load_inline builds per problem):
    KFORGE_UPSTREAM_EVAL=level1 [KFORGE_UPSTREAM_ONLY=19_ReLU,...] [KFORGE_UPSTREAM_SHARD=1/4] \
        python3 -m pytest -q -rs tests/gpu/test_upstream_evaluator.py
Skipped without a GPU, without ../shared/kernelbench (or $KFORGE_KERNELBENCH) and without upstream's
package (../shared/kernelbench/upstream, or $KFORGE_KERNELBENCH_UPSTREAM). Writes the records to
$KFORGE_UPSTREAM_JSON when set (bench/results/ is where committed ones go).

Untested on a GPU when written (the session had none): the CPU collects it and runs its helpers.
"""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(ROOT, "build", "kforge"))
SHARED = os.environ.get("KFORGE_KERNELBENCH", os.path.join(ROOT, "..", "shared", "kernelbench"))
UPSTREAM = os.environ.get("KFORGE_KERNELBENCH_UPSTREAM", os.path.join(SHARED, "upstream"))
LEVELS = [lv for lv in os.environ.get("KFORGE_UPSTREAM_EVAL", "").split(",") if lv]

sys.path.insert(0, os.path.join(ROOT, "python"))
from kforge import upstream_eval  # noqa: E402


def skip_reason():
    if not os.path.exists("/dev/nvidia0"):
        return "needs an NVIDIA GPU"
    if not os.path.isdir(os.path.join(UPSTREAM, "kernelbench")):
        return "needs upstream KernelBench's evaluator package in %s (or $KFORGE_KERNELBENCH_UPSTREAM)" % UPSTREAM
    if not LEVELS:
        return "opt-in (about an hour per level): set KFORGE_UPSTREAM_EVAL=level1 (or level1,level2)"
    missing = [lv for lv in LEVELS if not os.path.isdir(os.path.join(SHARED, lv))]
    if missing:
        return "no %s in %s (or $KFORGE_KERNELBENCH)" % (", ".join(missing), SHARED)
    return None


def problems_of(level):
    folder = os.path.join(SHARED, level)
    names = sorted((f for f in os.listdir(folder) if f.endswith(".py")),
                   key=lambda f: (int(f.split("_")[0]) if f.split("_")[0].isdigit() else 1 << 30, f))
    only = set(filter(None, os.environ.get("KFORGE_UPSTREAM_ONLY", "").split(",")))
    if only:
        names = [f for f in names if os.path.splitext(f)[0] in only]
    shard = os.environ.get("KFORGE_UPSTREAM_SHARD", "")
    if shard:
        k, n = (int(x) for x in shard.split("/"))
        size = -(-len(names) // n)
        names = names[(k - 1) * size:k * size]
    return [os.path.join(folder, f) for f in names]


def kforge_verdict(problem, exported):
    """kforge's harness on the exported file, under the protocol upstream's evaluator matches (1e-4)."""
    r = subprocess.run([KFORGE, "evaluate", problem, exported, "--protocol", "kernelbench", "--json", "--no-profile",
                        "--timeout", "1200"], capture_output=True, text=True, timeout=1800)
    try:
        res = json.loads(r.stdout)
    except ValueError:
        return {"outcome": "harness_error", "message": (r.stderr or r.stdout).strip()[-400:]}
    return {"outcome": res.get("outcome"), "message": str(res.get("message", ""))[:400]}


def judge(problem, out_dir):
    """One problem: export, kforge's verdict, upstream's verdict, and whether they agree."""
    name = os.path.splitext(os.path.basename(problem))[0]
    exported = os.path.join(out_dir, name + ".py")
    rec = {"problem": name}
    r = subprocess.run([KFORGE, "export", problem, "--format", "kernelbench", "-o", exported, "--force",
                        "--allow-library-only", "--protocol", "kernelbench"], capture_output=True, text=True,
                       timeout=900)
    if r.returncode != 0:
        rec.update(kforge="export_failed", upstream="not_run", agrees=None, message=r.stderr.strip()[-400:])
        return rec
    kf = kforge_verdict(problem, exported)
    up = upstream_eval.evaluate_in_process_of_its_own(UPSTREAM, problem, exported, trials=5, perf=False,
                                                      static_only=False, timeout=1800)
    rec.update(kforge=kf["outcome"], upstream=up["verdict"], agrees=upstream_eval.agreement(kf["outcome"], False,
                                                                                            up["verdict"]))
    rec["static_errors"] = up.get("static_errors", [])
    if rec["agrees"] is not True:
        rec["kforge_message"] = kf["message"]
        rec["upstream_message"] = up.get("message") or json.dumps(up.get("metadata", {}))[:400]
    return rec


def explain(records):
    """Lines for the report: one per disagreement or problem upstream could not judge."""
    lines = []
    for r in records:
        if r["agrees"] is True:
            continue
        why = "upstream's static checker: " + "; ".join(r["static_errors"]) if r.get("static_errors") else \
            r.get("upstream_message", "")
        lines.append("%s: kforge %s, upstream %s: %s | kforge: %s" % (r["problem"], r["kforge"], r["upstream"],
                                                                      why, r.get("kforge_message", "")))
    return lines


def test_explain_lists_what_differs():
    recs = [{"problem": "a", "kforge": "ok", "upstream": "correct", "agrees": True},
            {"problem": "b", "kforge": "ok", "upstream": "rejected_static", "agrees": None,
             "static_errors": ["Missing __global__ kernel definition"], "kforge_message": ""},
            {"problem": "c", "kforge": "wrong_answer", "upstream": "correct", "agrees": False,
             "upstream_message": "", "kforge_message": "seed 1000: output 0 differs"}]
    lines = explain(recs)
    assert len(lines) == 2 and "Missing __global__" in lines[0] and "output 0 differs" in lines[1]
    assert upstream_eval.agreement("ok", False, "correct") is True
    assert upstream_eval.agreement("wrong_answer", False, "correct") is False
    assert upstream_eval.agreement("ok", True, "correct") is None  # a predicted outcome verifies nothing


@pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
@pytest.mark.parametrize("level", LEVELS or ["level1"])
def test_upstream_evaluator_agrees_with_kforge(level, tmp_path):
    records = []
    out = os.environ.get("KFORGE_UPSTREAM_JSON")
    for problem in problems_of(level):
        rec = judge(problem, str(tmp_path))
        records.append(rec)
        print("%-50s kforge %-14s upstream %-15s %s" % (rec["problem"][:50], rec["kforge"], rec["upstream"],
                                                        {True: "agree", False: "DISAGREE", None: "-"}[rec["agrees"]]),
              flush=True)
        if out:  # after every problem: a call cut short keeps what it judged
            with open(out.replace("{level}", level), "w") as f:
                json.dump({"level": level, "records": records}, f, indent=1)
    lines = explain(records)
    print("\n".join(lines))
    disagreements = [r for r in records if r["agrees"] is False]
    assert not disagreements, "upstream's evaluator disagrees with kforge's harness on %d of %d:\n%s" % (
        len(disagreements), len(records), "\n".join(lines))
