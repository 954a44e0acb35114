"""Every problem of a suite level exported as one self-contained KernelBench ModelNew file
(`kforge export --format kernelbench --allow-library-only`) and verified by kforge's harness in that
form (`kforge evaluate --no-profile`: static checks, load_inline build inside the candidate's
process, 5 fresh input sets). Builds run in parallel (each load_inline build is one worker's);
a problem that ran out of GPU memory next to the others is verified again at the end, a quarter as
many at once, then alone.

    python3 bench/export_check.py --suite .gpu/kb/level1 --out /tmp/exports --json OUT.json [-j 12]

Prints one line per problem as it finishes, then a table; writes the records as JSON.
"""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time

KFORGE = os.environ.get("KFORGE_BIN", "build/kforge")


def export(problem, out_dir):
    name = os.path.splitext(os.path.basename(problem))[0]
    dest = os.path.join(out_dir, name + ".py")
    r = subprocess.run([KFORGE, "export", problem, "--format", "kernelbench", "-o", dest, "--force",
                        "--allow-library-only"], capture_output=True, text=True, timeout=600)
    rec = {"problem": name, "exported": r.returncode == 0, "file": dest}
    if r.returncode != 0:
        rec["outcome"] = "export_failed"
        rec["message"] = r.stderr.strip()[-400:]
        return rec
    with open(dest) as f:
        head = f.read(2000)
    rec["library_only"] = "no __global__ kernel in this file" in head
    rec["docstrings_removed"] = "without its docstrings" in head.splitlines()[0]
    return rec


def evaluate(problem, rec, timeout):
    t0 = time.time()
    r = subprocess.run([KFORGE, "evaluate", problem, rec["file"], "--json", "--no-profile", "--timeout", str(timeout)],
                       capture_output=True, text=True, timeout=timeout + 300)
    rec["seconds"] = round(time.time() - t0, 1)
    try:
        res = json.loads(r.stdout)
    except ValueError:
        rec.update(outcome="harness_error", message=(r.stderr or r.stdout).strip()[-400:])
        return rec
    rec["outcome"] = res.get("outcome")
    rec["max_abs_err"] = res.get("max_abs_err")
    if rec["outcome"] != "ok":
        rec["message"] = str(res.get("message", ""))[:400]
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", required=True, help="a directory of KernelBench problem files (one level)")
    ap.add_argument("--out", required=True, help="where the exported files go")
    ap.add_argument("--json", required=True)
    ap.add_argument("-j", "--jobs", type=int, default=12, help="evaluations at once (each builds its file)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per evaluation, the build included")
    ap.add_argument("--only", default="", help="comma-separated problem names")
    ap.add_argument("--shard", default="", help="K/N: only the K-th of N equal parts of the sorted problems "
                    "(to split a level over device calls)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    problems = sorted(os.path.join(args.suite, f) for f in os.listdir(args.suite) if f.endswith(".py"))
    if args.only:
        keep = set(args.only.split(","))
        problems = [p for p in problems if os.path.splitext(os.path.basename(p))[0] in keep]
    if args.shard:
        try:
            k, n = (int(x) for x in args.shard.split("/"))
            assert 1 <= k <= n
        except (ValueError, AssertionError):
            ap.error("--shard takes K/N with 1 <= K <= N, e.g. 1/2, not %r" % args.shard)
        size = -(-len(problems) // n)
        problems = problems[(k - 1) * size:k * size]
    start = time.time()
    with cf.ThreadPoolExecutor(os.cpu_count() or 8) as pool:
        recs = list(pool.map(lambda p: export(p, args.out), problems))
    by_name = {os.path.splitext(os.path.basename(p))[0]: p for p in problems}
    print("exported %d/%d in %.0f s" % (sum(r["exported"] for r in recs), len(recs), time.time() - start), flush=True)
    todo = [r for r in recs if r["exported"]]

    def write(final):
        ok = sum(r.get("outcome") == "ok" for r in recs)
        summary = {"problems": len(recs), "ok": ok, "complete": final,
                   "library_only": sum(bool(r.get("library_only")) for r in recs),
                   "docstrings_removed": sum(bool(r.get("docstrings_removed")) for r in recs),
                   "seconds": round(time.time() - start, 1)}
        doc = {"suite": args.suite, "commit": os.environ.get("KFORGE_COMMIT", ""),
               "date": time.strftime("%Y-%m-%d"), "summary": summary, "problems": recs}
        with open(args.json + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(args.json + ".tmp", args.json)
        return summary

    done = 0
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(evaluate, by_name[r["problem"]], r, args.timeout): r for r in todo}
        for fut in cf.as_completed(futures):
            rec = fut.result()
            done += 1
            print("[%3d/%d] %-70s %s (%.0f s)" % (done, len(todo), rec["problem"][:70], rec["outcome"], rec["seconds"]),
                  flush=True)
            write(False)
    # Out of memory next to the others: again, a quarter as many at once, then alone.
    for jobs in sorted({max(1, args.jobs // 4), 1}, reverse=True):
        again = [r for r in todo if r["outcome"] == "resource_exhausted"]
        if not again:
            break
        with cf.ThreadPoolExecutor(jobs) as pool:
            for rec in pool.map(lambda r: evaluate(by_name[r["problem"]], r, args.timeout), again):
                rec["retried_with"] = jobs
                print("again, %d at once: %s %s" % (jobs, rec["problem"], rec["outcome"]), flush=True)
        write(False)
    summary = write(True)
    ok = summary["ok"]
    for r in recs:
        if r.get("outcome") != "ok":
            print("NOT OK %s: %s: %s" % (r["problem"], r.get("outcome"), r.get("message", "")[:200]))
    print("exported files verified by kforge's harness: %d/%d ok (%d library-only, %d without docstrings), %.0f s"
          % (ok, len(recs), summary["library_only"], summary["docstrings_removed"], summary["seconds"]))
    return 0 if ok == len(recs) else 1


if __name__ == "__main__":
    sys.exit(main())
