"""`kforge agent --suite DIR`: one episode per problem, then the paper's table: pass rate, faster than
eager, faster than torch.compile, geomean speed-ups, mean turns and tokens; beside it kforge's own
compiler on the same problems when a `kforge bench --json` report is given (--compare-bench)."""
import glob
import json
import math
import os

from . import trajectory


def suite_problems(suite, levels=None, only=None):
    files = sorted(glob.glob(os.path.join(suite, "level*", "*.py"))) or sorted(glob.glob(os.path.join(suite, "*.py")))
    out = []
    for f in files:
        level = os.path.basename(os.path.dirname(f)) if os.path.basename(os.path.dirname(f)).startswith("level") else ""
        stem = os.path.splitext(os.path.basename(f))[0]
        if levels and level not in levels:
            continue
        if only and stem not in only:
            continue
        out.append((level, stem, f))
    return out


def _geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def row_of_episode(path, level, stem):
    ev = trajectory.load(path)
    end = trajectory.episode_summary(ev) or {}
    best = end.get("best") or {}
    r = {"level": level, "problem": stem, "finished": bool(end), "reward": end.get("reward"),
         "correct": bool(best) and not end.get("tampered"), "turns": end.get("turns"),
         "tokens": end.get("total_tokens"), "stop_reason": end.get("stop_reason"),
         "t_candidate": best.get("t_candidate"), "t_eager": best.get("t_eager"), "t_compile": best.get("t_compile"),
         "scripted_harness": bool(best.get("scripted_harness")), "verified_any": end.get("verified_any")}
    return r


def table(rows, who="agent"):
    n = len(rows)
    correct = [r for r in rows if r["correct"]]
    timed = [r for r in correct if r.get("t_candidate") and r.get("t_eager")]
    s = {"who": who, "problems": n, "pass": len(correct) / n if n else 0.0,
         "faster_than_eager": sum(1 for r in timed if r["t_candidate"] < 0.95 * r["t_eager"]) / n if n else 0.0,
         "faster_than_compile": sum(1 for r in timed if r.get("t_compile") and r["t_candidate"] < 0.95 * r["t_compile"])
         / n if n else 0.0,
         "geomean_speedup_vs_eager": _geomean([r["t_eager"] / r["t_candidate"] for r in timed]),
         "geomean_speedup_vs_compile": _geomean([r["t_compile"] / r["t_candidate"] for r in timed if r.get("t_compile")]),
         "mean_turns": (sum(r["turns"] or 0 for r in rows) / n) if n else None,
         "mean_tokens": (sum(r["tokens"] or 0 for r in rows) / n) if n else None}
    return s


def bench_rows(bench_json, names):
    with open(bench_json) as f:
        doc = json.load(f)
    rows = []
    for p in doc.get("problems", []):
        if names and p.get("problem") not in names:
            continue
        ms = lambda k: (p.get(k) / 1e3) if p.get(k) is not None else None
        rows.append({"level": p.get("level"), "problem": p.get("problem"), "correct": bool(p.get("correct")),
                     "t_candidate": ms("t_candidate_ms"), "t_eager": ms("t_eager_ms"), "t_compile": ms("t_compile_ms"),
                     "turns": None, "tokens": None})
    return rows, bool(doc.get("predicted"))


def render(summaries):
    """The table as text: percentages of all problems, speed-ups as x, means with one decimal."""
    cols = ["who", "problems", "pass", "faster_than_eager", "faster_than_compile", "geomean_speedup_vs_eager",
            "geomean_speedup_vs_compile", "mean_turns", "mean_tokens"]

    def fmt(c, v):
        if v is None:
            return "-"
        if c in ("pass", "faster_than_eager", "faster_than_compile"):
            return "%.1f%%" % (100 * v)
        if c.startswith("geomean"):
            return "%.2fx" % v
        if c.startswith("mean"):
            return "%.1f" % v
        return str(v)

    return "\n".join([" | ".join(cols)] + [" | ".join(fmt(c, s.get(c)) for c in cols) for s in summaries])
