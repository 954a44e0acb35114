"""Upstream KernelBench's own evaluator on exported ModelNew files: its strict static checker
(`kernel_static_checker.validate_kernel_static`, backend cuda, fp32) and
`eval.eval_kernel_against_ref` (5 correctness trials, the precision's tolerance), each file in a
process of its own, one at a time (no GPU memory shared between problems). This file imports nothing
of kforge: `kforge bench --bundle` ships it in the archive as `run_upstream_eval.py`.

    python3 upstream_eval.py --upstream DIR --bundle BUNDLE_DIR [--json OUT] [--perf] [--static-only]
    python3 upstream_eval.py --upstream DIR --pair PROBLEM.py MODEL_NEW.py [--pair ...] [--json OUT]

DIR holds upstream's `kernelbench` package (default: $KFORGE_KERNELBENCH_UPSTREAM, else
../shared/kernelbench/upstream beside a kforge checkout). Without a GPU only the static checker runs.
Prints one line per file and a summary; with a bundle, each verdict beside kforge's own.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
import types

RESULT_MARK = "KFORGE_UPSTREAM_RESULT "


def default_upstream():
    env = os.environ.get("KFORGE_KERNELBENCH_UPSTREAM")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    # python/kforge/ in a kforge checkout: the sibling shared/ folder of the checkout.
    return os.path.normpath(os.path.join(here, "..", "..", "..", "shared", "kernelbench", "upstream"))


def _stand_in_base_model():
    class BaseModel:
        """What upstream's KernelExecResult needs of pydantic: defaults from the class, fields by keyword."""

        def __init__(self, **fields):
            for klass in reversed(type(self).__mro__):
                for name in getattr(klass, "__annotations__", {}):
                    if hasattr(klass, name):
                        value = getattr(klass, name)
                        setattr(self, name, dict(value) if isinstance(value, dict) else value)
            for name, value in fields.items():
                setattr(self, name, value)

        def model_dump(self):
            return dict(vars(self))

        dict = model_dump

    return BaseModel


def install_stand_ins():
    """Upstream's package imports modules for its LLM tooling only (dotenv, openai, litellm, tqdm in
    utils; requests and pydantic in eval): small stand-ins where this python lacks them."""
    def missing(name):
        return name not in sys.modules and importlib.util.find_spec(name) is None

    def module(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        m.__kforge_stand_in__ = True
        sys.modules[name] = m

    def unavailable(*args, **kwargs):
        raise RuntimeError("a stand-in module: not available in this evaluation")

    if missing("dotenv"):
        module("dotenv", load_dotenv=lambda *a, **k: False)
    if missing("openai"):
        module("openai", OpenAI=unavailable)
    if missing("litellm"):
        module("litellm", completion=unavailable)
    if missing("tqdm"):
        module("tqdm", tqdm=lambda iterable=None, *a, **k: iterable if iterable is not None else [])
    if missing("requests"):
        module("requests", get=unavailable, post=unavailable)
    if missing("pydantic"):
        module("pydantic", BaseModel=_stand_in_base_model())


def load_upstream(upstream):
    """(eval module, static checker module) of upstream's package in `upstream`."""
    if not os.path.isdir(os.path.join(upstream, "kernelbench")):
        raise FileNotFoundError("no kernelbench package in %s: pass --upstream or set KFORGE_KERNELBENCH_UPSTREAM"
                                % upstream)
    if upstream not in sys.path:
        sys.path.insert(0, upstream)
    install_stand_ins()
    from kernelbench import kernel_static_checker
    from kernelbench import eval as kb_eval
    return kb_eval, kernel_static_checker


def static_check(checker, source):
    valid, errors, warnings = checker.validate_kernel_static(source, backend="cuda", precision="fp32")
    return {"static_ok": bool(valid), "static_errors": list(errors), "static_warnings": list(warnings)}


def evaluate_one(upstream, problem, model_new, trials=5, perf=False, static_only=False, build_dir=None):
    """One file, in this process: the static checker, then (with a GPU) eval_kernel_against_ref."""
    kb_eval, checker = load_upstream(upstream)
    with open(problem) as f:
        ref_src = f.read()
    with open(model_new) as f:
        new_src = f.read()
    rec = {"problem": problem, "model_new": model_new}
    rec.update(static_check(checker, new_src))
    import torch
    if not rec["static_ok"]:
        rec["verdict"] = "rejected_static"
        return rec
    if static_only or not torch.cuda.is_available():
        rec["verdict"] = "not_run"
        rec["message"] = "static check only" if static_only else "no GPU: eval_kernel_against_ref needs CUDA"
        return rec
    t0 = time.time()
    res = kb_eval.eval_kernel_against_ref(ref_src, new_src, num_correct_trials=trials, measure_performance=perf,
                                          build_dir=build_dir, device=torch.device("cuda:0"), backend="cuda",
                                          precision=torch.float32)
    rec["seconds"] = round(time.time() - t0, 1)
    if res is None:  # upstream's answer to a lock-file error while building: retry
        rec["verdict"] = "retry"
        return rec
    rec["compiled"] = bool(res.compiled)
    rec["correctness"] = bool(res.correctness)
    rec["metadata"] = {str(k): str(v)[:500] for k, v in dict(res.metadata).items()}
    if perf:
        rec["runtime_us"] = res.runtime
        rec["ref_runtime_us"] = res.ref_runtime
    rec["verdict"] = "correct" if res.correctness else ("compile_error" if not res.compiled else "incorrect")
    return rec


def evaluate_in_process_of_its_own(upstream, problem, model_new, trials, perf, static_only, timeout):
    """evaluate_one in a fresh python (its own CUDA context and memory), with a time limit."""
    argv = [sys.executable, os.path.abspath(__file__), "--upstream", upstream, "--one", problem, model_new,
            "--trials", str(trials)] + (["--perf"] if perf else []) + (["--static-only"] if static_only else [])
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"problem": problem, "model_new": model_new, "verdict": "timeout",
                "message": "no answer within %d s" % timeout}
    for line in reversed(r.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK):])
    tail = (r.stderr or r.stdout).strip()[-600:]
    return {"problem": problem, "model_new": model_new, "verdict": "crashed",
            "message": "exit code %d: %s" % (r.returncode, tail)}


def bundle_pairs(bundle):
    """(problem, model_new, kforge's record) for every problem of an unpacked kforge bundle."""
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    pairs = []
    for p in manifest.get("problems", []):
        folder = os.path.join(bundle, p["dir"])
        export = p.get("export")
        pairs.append((os.path.join(folder, "problem.py"), os.path.join(folder, export) if export else None, p))
    return manifest, pairs


def agreement(kforge_outcome, predicted, verdict):
    """Whether upstream's verdict agrees with kforge's on correctness (None: nothing to compare)."""
    if predicted or kforge_outcome is None or verdict not in ("correct", "incorrect", "compile_error"):
        return None
    return (kforge_outcome == "ok") == (verdict == "correct")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", default=default_upstream(), help="the folder holding upstream's kernelbench package")
    ap.add_argument("--bundle", help="an unpacked `kforge bench --bundle` archive (its kforge-bundle folder)")
    ap.add_argument("--pair", nargs=2, action="append", default=[], metavar=("PROBLEM", "MODEL_NEW"))
    ap.add_argument("--one", nargs=2, metavar=("PROBLEM", "MODEL_NEW"), help=argparse.SUPPRESS)
    ap.add_argument("--trials", type=int, default=5, help="correctness trials (random input sets)")
    ap.add_argument("--perf", action="store_true", help="also time with upstream's method (measure_performance)")
    ap.add_argument("--static-only", action="store_true", help="the static checker only (no GPU needed)")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per file, its build included")
    ap.add_argument("--json", help="write the records here")
    args = ap.parse_args(argv)
    if args.one:
        rec = evaluate_one(args.upstream, args.one[0], args.one[1], args.trials, args.perf, args.static_only)
        sys.stdout.flush()
        print(RESULT_MARK + json.dumps(rec), flush=True)
        return 0
    if not os.path.isdir(os.path.join(args.upstream, "kernelbench")):
        print("no kernelbench package in %s: pass --upstream DIR (upstream KernelBench's src folder) or set "
              "KFORGE_KERNELBENCH_UPSTREAM" % args.upstream, file=sys.stderr)
        return 2
    manifest = None
    jobs = [(p, m, None) for p, m in args.pair]
    if args.bundle:
        manifest, more = bundle_pairs(args.bundle)
        jobs += more
    if not jobs:
        ap.error("nothing to evaluate: give --bundle DIR or --pair PROBLEM MODEL_NEW")
    records = []
    for problem, model_new, kf in jobs:
        name = kf["problem"] if kf else os.path.basename(problem)
        if model_new is None:
            rec = {"problem": problem, "verdict": "not_exported", "message": (kf or {}).get("export_error", "")}
        else:
            rec = evaluate_in_process_of_its_own(args.upstream, problem, model_new, args.trials, args.perf,
                                                 args.static_only, args.timeout)
        if kf is not None:
            rec["level"] = kf.get("level")
            rec["kforge_outcome"] = kf.get("outcome")
            rec["agrees"] = agreement(kf.get("outcome"), manifest.get("predicted", True), rec["verdict"])
        records.append(rec)
        print("%-50s upstream %-15s kforge %-14s %s" % (name[:50], rec["verdict"], rec.get("kforge_outcome") or "-",
              {True: "agree", False: "DISAGREE", None: ""}[rec.get("agrees")]), flush=True)
    disagreements = [r for r in records if r.get("agrees") is False]
    verdicts = {}
    for r in records:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    print("%d files: %s; %d disagreements with kforge's harness" % (
        len(records), ", ".join("%s %d" % kv for kv in sorted(verdicts.items())), len(disagreements)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"upstream": os.path.abspath(args.upstream), "records": records}, f, indent=1)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
