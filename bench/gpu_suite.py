"""Device batch over prebuilt candidates (bench/prepare_gpu_batch.sh stages them in .gpu/):
verify every candidate under each protocol in parallel harness workers (each restarted after a
fault or a hang), then profile the correct ones one at a time (candidate, eager, torch.compile
interleaved, L2 flushed). Writes JSON after every problem, so a call cut short keeps what it did,
and prints a table last.

    python3 bench/gpu_suite.py --cands .gpu/cand --suite .gpu/kb --out $OUT \
        [--protocols cuda-agent,kernelbench] [--workers 4] [--profile cuda-agent] [--trials 20] [--deadline 480]
"""
import argparse
import datetime
import glob
import json
import math
import os
import queue
import selectors
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Worker:
    """One harness process (python3 -m kforge.harness --serve); replaced after a fault or a hang."""

    def __init__(self, python, env):
        self.python, self.env, self.proc = python, env, None

    def ask(self, req, timeout):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([self.python, "-m", "kforge.harness", "--serve"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                         env=self.env, start_new_session=True)
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.close()
            return {"outcome": "timeout", "message": "no answer in %d s" % timeout}
        line = self.proc.stdout.readline()
        if not line:
            self.proc = None
            return {"outcome": "runtime_fault", "message": "the harness worker died"}
        return json.loads(line)

    def close(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            self.proc = None


def problems_of(suite, levels, only):
    out = []
    for level in levels:
        files = glob.glob(os.path.join(suite, level, "*.py"))
        for p in sorted(files, key=lambda s: int(os.path.basename(s).split("_")[0])):
            stem = os.path.basename(p)[:-3]
            if not only or stem in only:
                out.append((level, stem, p))
    return out


def summarize(records, protocols, levels):
    summary = {}
    for proto in protocols:
        for lv in levels + ["all"]:
            rs = [r for r in records if r["protocol"] == proto and (lv == "all" or r["level"] == lv)]
            if not rs:
                continue
            ok = [r for r in rs if r.get("outcome") == "ok"]
            prof = [r for r in ok if r.get("t_candidate")]
            s = {"problems": len(rs), "correct": len(ok), "pass_rate": len(ok) / len(rs), "profiled": len(prof)}
            if prof:
                comp = [r for r in prof if r.get("t_compile")]
                s["faster_than_eager"] = sum(r["t_candidate"] < r["t_eager"] for r in prof) / len(rs)
                s["faster_than_compile"] = sum(r["t_candidate"] < r["t_compile"] for r in comp) / len(rs)
                s["geomean_speedup_vs_eager"] = math.exp(
                    sum(math.log(r["t_eager"] / r["t_candidate"]) for r in prof) / len(prof))
                if comp:
                    s["geomean_speedup_vs_compile"] = math.exp(
                        sum(math.log(r["t_compile"] / r["t_candidate"]) for r in comp) / len(comp))
            summary["%s/%s" % (proto, lv)] = s
    return summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cands", required=True, help="<protocol>/<level>/<stem>/model_new.py")
    ap.add_argument("--suite", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--levels", default="level1,level2")
    ap.add_argument("--protocols", default="cuda-agent,kernelbench")
    ap.add_argument("--workers", type=int, default=4, help="parallel verification workers sharing the GPU")
    ap.add_argument("--profile", default="cuda-agent", help="protocols whose correct candidates are timed ('' for none)")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--deadline", type=float, default=480, help="seconds; no new work starts after it")
    ap.add_argument("--only", default="", help="comma-separated problem stems")
    args = ap.parse_args()
    t_start = time.time()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    python = env.get("KFORGE_PYTHON", sys.executable)
    levels = args.levels.split(",")
    protocols = [p for p in args.protocols.split(",") if p]
    problems = problems_of(args.suite, levels, set(filter(None, args.only.split(","))))
    os.makedirs(args.out, exist_ok=True)
    import torch
    meta = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
            "torch": torch.__version__, "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "commit": open(os.path.join(os.path.dirname(args.cands.rstrip("/")), "COMMIT")).read().strip()
            if os.path.exists(os.path.join(os.path.dirname(args.cands.rstrip("/")), "COMMIT")) else "unknown",
            "method": "verify: 5 fresh input sets, outputs poisoned, protocol tolerance; profile: 3 warm-ups, "
                      "%d interleaved trials of candidate/eager/torch.compile (default mode, compiled before "
                      "timing), 256 MB L2 flush before each, CUDA events, median" % args.trials}
    records = []
    lock = threading.Lock()

    def save():
        doc = dict(meta, summary=summarize(records, protocols, levels), records=records)
        tmp = os.path.join(args.out, "results.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, os.path.join(args.out, "results.json"))

    work = queue.Queue()
    for proto in protocols:
        for lv, st, p in problems:
            work.put((proto, lv, st, p))

    def verify_loop():
        w = Worker(python, env)
        while time.time() - t_start < args.deadline:
            try:
                proto, lv, st, p = work.get_nowait()
            except queue.Empty:
                break
            cand = os.path.join(args.cands, proto, lv, st, "model_new.py")
            rec = {"protocol": proto, "level": lv, "problem": st}
            if not os.path.exists(cand):
                rec.update(outcome="compile_error", message="no candidate was built")
            else:
                t0 = time.time()
                # Correct candidates of profiled protocols get their reference compiled here, in
                # parallel, so the serial profile phase finds the inductor cache warm.
                rec.update(w.ask({"problem": p, "candidate": cand, "protocol": proto,
                                  "precompile": proto in args.profile.split(",")}, timeout=240))
                rec["verify_seconds"] = round(time.time() - t0, 2)
                rec.update(protocol=proto, level=lv, problem=st)  # the harness's own "problem" is a path
            with lock:
                records.append(rec)
                save()
                print("verify %-11s %-7s %-55s %-14s %s" % (proto, lv, st[:55], rec.get("outcome"),
                                                           (rec.get("message") or "")[:90]), flush=True)
        w.close()

    threads = [threading.Thread(target=verify_loop) for _ in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("verified %d candidates in %.0f s" % (len(records), time.time() - t_start), flush=True)

    w = Worker(python, env)
    for rec in sorted(records, key=lambda r: (r["protocol"], r["level"], int(r["problem"].split("_")[0]))):
        if rec["protocol"] not in args.profile.split(",") or rec.get("outcome") != "ok":
            continue
        if time.time() - t_start > args.deadline:
            rec["profile_error"] = "skipped: deadline"
            continue
        p = os.path.join(args.suite, rec["level"], rec["problem"] + ".py")
        cand = os.path.join(args.cands, rec["protocol"], rec["level"], rec["problem"], "model_new.py")
        res = w.ask({"problem": p, "candidate": cand, "protocol": rec["protocol"], "profile": True,
                     "verify": False, "trials": args.trials}, timeout=180)
        keys = [k for k in res if k.startswith("t_") or k.startswith("spread_")] + ["samples", "compile_seconds"]
        rec.update({k: res[k] for k in keys if k in res})
        if res.get("outcome") != "ok" or res.get("profile_error"):
            rec["profile_error"] = res.get("profile_error") or "%s: %s" % (res.get("outcome"), res.get("message"))
        save()
        if rec.get("t_candidate"):
            print("profile %-7s %-55s cand %8.3f ms  eager %8.3f ms  compile %8s ms" % (
                rec["level"], rec["problem"][:55], 1e3 * rec["t_candidate"], 1e3 * rec["t_eager"],
                "%.3f" % (1e3 * rec["t_compile"]) if rec.get("t_compile") else "-"), flush=True)
    w.close()
    save()

    print()
    for r in records:
        if r.get("outcome") != "ok":
            print("FAIL %s %s/%s: %s: %s" % (r["protocol"], r["level"], r["problem"], r.get("outcome"),
                                             (r.get("message") or "")[:200]))
    print()
    print("%-22s %8s %8s %6s %9s %9s %9s %9s" % ("protocol/level", "problems", "correct", "pass", "fast>eag",
                                                 "fast>cmp", "gm/eager", "gm/comp"))
    for key, s in summarize(records, protocols, levels).items():
        print("%-22s %8d %8d %5.0f%% %9s %9s %9s %9s" % (
            key, s["problems"], s["correct"], 100 * s["pass_rate"],
            "%.0f%%" % (100 * s["faster_than_eager"]) if "faster_than_eager" in s else "-",
            "%.0f%%" % (100 * s["faster_than_compile"]) if "faster_than_compile" in s else "-",
            "%.2fx" % s["geomean_speedup_vs_eager"] if "geomean_speedup_vs_eager" in s else "-",
            "%.2fx" % s["geomean_speedup_vs_compile"] if "geomean_speedup_vs_compile" in s else "-"))
    print("device %s, torch %s, commit %s, %.0f s" % (meta["device"], meta["torch"], meta["commit"],
                                                      time.time() - t_start))


if __name__ == "__main__":
    main()
