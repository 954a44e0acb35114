"""GPU batch: build every problem of a suite with kforge (parallel), then verify (and optionally
profile) each candidate in a harness worker that is restarted after a fault or a hang. Prints a
table last and writes JSON.

    python3 bench/gpu_check.py --kforge build-gpu/kforge --suite .kb --out $OUT/run [--profile LEVELS]
"""
import argparse
import concurrent.futures
import datetime
import glob
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Worker:
    def __init__(self, python, env):
        self.python, self.env, self.proc = python, env, None

    def start(self):
        self.proc = subprocess.Popen([self.python, "-m", "kforge.harness", "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=self.env)

    def ask(self, req, timeout):
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.proc.kill()
            self.proc = None
            return {"outcome": "timeout", "message": "no answer in %d s" % timeout}
        line = self.proc.stdout.readline()
        if not line:
            self.proc = None
            return {"outcome": "runtime_fault", "message": "the harness worker died"}
        return json.loads(line)


def build(kforge, problem, out, env):
    t0 = time.time()
    r = subprocess.run([kforge, "build", problem, "--out", out, "--force", "--jobs", "1", "--json"],
                       capture_output=True, text=True, env=env, timeout=900)
    rec = {"build_rc": r.returncode, "build_seconds": time.time() - t0}
    if r.returncode != 0:
        rec["build_error"] = (r.stderr or r.stdout)[-1500:]
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--suite", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--levels", default="level1,level2")
    ap.add_argument("--protocol", default="cuda-agent")
    ap.add_argument("--profile", default="", help="levels to profile, e.g. level1")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated problem stems")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    python = env.get("KFORGE_PYTHON", sys.executable)
    problems = []
    for level in args.levels.split(","):
        for p in sorted(glob.glob(os.path.join(args.suite, level, "*.py")), key=lambda s: int(os.path.basename(s).split("_")[0])):
            stem = os.path.basename(p)[:-3]
            if args.only and stem not in args.only.split(","):
                continue
            problems.append((level, stem, p))
    records = {}
    t0 = time.time()
    if not args.skip_build:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
            futs = {ex.submit(build, args.kforge, p, os.path.join(args.out, lv, st), env): (lv, st) for lv, st, p in problems}
            for f in concurrent.futures.as_completed(futs):
                records[futs[f]] = f.result()
        print("built %d problems in %.0f s" % (len(problems), time.time() - t0), flush=True)
    worker = Worker(python, env)
    for lv, st, p in problems:
        rec = records.setdefault((lv, st), {})
        cand = os.path.join(args.out, lv, st, "model_new.py")
        if rec.get("build_rc", 0) != 0 or not os.path.exists(cand):
            rec["outcome"] = "compile_error"
            continue
        req = {"problem": p, "candidate": cand, "protocol": args.protocol, "profile": lv in args.profile.split(","),
               "trials": args.trials}
        rec.update(worker.ask(req, timeout=300))
        print("%-8s %-60s %-14s %s" % (lv, st[:60], rec.get("outcome"), (rec.get("message") or "")[:100]), flush=True)
    summary = {}
    for lv in sorted({lv for lv, _, _ in problems}):
        rs = [r for (l, _), r in records.items() if l == lv]
        ok = [r for r in rs if r.get("outcome") == "ok"]
        prof = [r for r in ok if r.get("t_candidate")]
        s = {"problems": len(rs), "correct": len(ok), "pass_rate": len(ok) / max(len(rs), 1)}
        if prof:
            s["profiled"] = len(prof)
            s["faster_than_eager"] = sum(r["t_candidate"] < r["t_eager"] for r in prof) / len(rs)
            s["faster_than_compile"] = sum(r["t_candidate"] < r["t_compile"] for r in prof if r.get("t_compile")) / len(rs)
            s["geomean_speedup_vs_eager"] = math.exp(sum(math.log(r["t_eager"] / r["t_candidate"]) for r in prof) / len(prof))
            s["geomean_speedup_vs_compile"] = math.exp(sum(math.log(r["t_compile"] / r["t_candidate"]) for r in prof if r.get("t_compile")) / len(prof))
        summary[lv] = s
    import torch
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    doc = {"device": device, "torch": torch.__version__, "protocol": args.protocol,
           "date": datetime.date.today().isoformat(), "commit": os.environ.get("KFORGE_COMMIT", "unknown"),
           "summary": summary,
           "problems": [dict(level=lv, problem=st, **records[(lv, st)]) for lv, st, _ in problems]}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print()
    for (lv, st), r in sorted(records.items()):
        if r.get("outcome") != "ok":
            print("FAIL %s/%s: %s %s" % (lv, st, r.get("outcome"), (r.get("message") or r.get("build_error") or "")[:300]))
    print()
    print("%-8s %8s %8s %8s %10s %10s %10s %10s" % ("level", "problems", "correct", "pass", "fast>eag", "fast>cmp", "gm/eager", "gm/comp"))
    for lv, s in summary.items():
        print("%-8s %8d %8d %7.0f%% %10s %10s %10s %10s" % (
            lv, s["problems"], s["correct"], 100 * s["pass_rate"],
            "%.0f%%" % (100 * s["faster_than_eager"]) if "faster_than_eager" in s else "-",
            "%.0f%%" % (100 * s["faster_than_compile"]) if "faster_than_compile" in s else "-",
            "%.2fx" % s["geomean_speedup_vs_eager"] if "geomean_speedup_vs_eager" in s else "-",
            "%.2fx" % s["geomean_speedup_vs_compile"] if "geomean_speedup_vs_compile" in s else "-"))


if __name__ == "__main__":
    main()
