"""HTML reports people read, from kforge's JSON: `kforge bench` (kforge.bench/1) and `kforge optimize`
(kforge.report/1). One self-contained file (plots embedded as PNG): per-level tables, a time plot per
problem (candidate vs eager vs torch.compile, with the roofline floor), the agent's turns, build times.

    python3 -m kforge.report BENCH_OR_REPORT.json [-o report.html]

`kforge bench` and `kforge optimize` run it after writing their JSON; a failure here is a warning there
and never costs the JSON. Exit status: 0 written, 2 bad input, 3 matplotlib missing.
"""
import argparse
import base64
import html
import io
import json
import math
import os
import sys

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td.name, th.name { text-align: left; }
tr.fail td { background: #fdecea; } tr.slow td.speed { color: #b00; } tr.fast td.speed { color: #070; }
.note { background: #fff8e1; border-left: 4px solid #f0b400; padding: 0.5em 1em; }
img { max-width: 100%; } code { background: #f3f3f3; padding: 0 3px; }
"""


def esc(v):
    return html.escape("" if v is None else str(v))


def fmt_ms(v):
    if v is None:
        return "&ndash;"
    return f"{v * 1000:.1f} us" if v < 0.1 else f"{v:.3f} ms" if v < 100 else f"{v:.0f} ms"


def fmt_num(v, spec=".2f"):
    if v is None:
        return "&ndash;"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return format(v, spec) if isinstance(v, float) else str(v)
    return esc(v)


def ratio(a, b):
    return a / b if a and b else None


def _matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def time_plot(plt, rows, title):
    """One row per problem: candidate, eager, torch.compile and the roofline floor on a log time axis."""
    series = [("t_candidate_ms", "kforge candidate", "o", "#1f77b4"), ("t_eager_ms", "eager", "s", "#7f7f7f"),
              ("t_compile_ms", "torch.compile", "^", "#ff7f0e"), ("t_floor_ms", "roofline floor", "|", "#2ca02c")]
    rows = [r for r in rows if any(r.get(k) for k, *_ in series)]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.26 * len(rows)))
    ys = list(range(len(rows)))[::-1]
    for key, label, marker, color in series:
        pts = [(r[key], y) for r, y in zip(rows, ys) if r.get(key)]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color, label=label,
                       s=60 if marker == "|" else 28, zorder=3)
    ax.set_xscale("log")
    ax.set_yticks(ys)
    ax.set_yticklabels([r["problem"][:48] for r in rows], fontsize=7)
    ax.set_xlabel("time per call (ms, log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.set_ylim(-1, len(rows))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    src = png(fig)
    plt.close(fig)
    return src


def speedup_plot(plt, rows, title):
    """Speed-up of the candidate over eager and over torch.compile per problem (bars; 1 = as fast)."""
    rows = [r for r in rows if r.get("t_candidate_ms") and (r.get("t_eager_ms") or r.get("t_compile_ms"))]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.26 * len(rows)))
    ys = list(range(len(rows)))[::-1]
    h = 0.38
    for off, key, label, color in ((h / 2, "t_eager_ms", "vs eager", "#7f7f7f"), (-h / 2, "t_compile_ms", "vs torch.compile", "#ff7f0e")):
        vals = [ratio(r.get(key), r["t_candidate_ms"]) or 0 for r in rows]
        ax.barh([y + off for y in ys], vals, height=h, color=color, label=label)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(ys)
    ax.set_yticklabels([r["problem"][:48] for r in rows], fontsize=7)
    ax.set_xlabel("speed-up (baseline time / candidate time, log scale; right of 1 = kforge faster)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    src = png(fig)
    plt.close(fig)
    return src


def table(headers, rows, row_classes=None, row_ids=None):
    out = ["<table><tr>" + "".join(f'<th class="{"name" if i == 0 else ""}">{h}</th>' for i, h in enumerate(headers)) + "</tr>"]
    for i, r in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        rid = f' data-problem="{esc(row_ids[i])}"' if row_ids else ""
        cells = "".join(f'<td class="{"name" if j == 0 else ("speed" if "speed" in headers[j] else "")}">{c}</td>'
                        for j, c in enumerate(r))
        out.append(f"<tr{cls}{rid}>{cells}</tr>")
    out.append("</table>")
    return "\n".join(out)


def img(src, alt):
    return f'<p><img alt="{esc(alt)}" src="{src}"></p>' if src else "<p>(no times to plot)</p>"


_METRICS = [("problems", "problems", "d"), ("built", "built", "d"), ("correct", "correct", "d"),
            ("pass_rate", "pass", ".2f"), ("faster_than_eager", "faster &gt; eager", ".2f"),
            ("faster_than_compile", "faster &gt; compile", ".2f"), ("speedup_vs_eager", "speed-up vs eager", ".2f"),
            ("speedup_vs_compile", "speed-up vs compile", ".2f"), ("speedup_vs_compile_tf32", "speed-up vs compile tf32", ".2f"),
            ("median_floor_over_t", "floor / t", ".2f"), ("mean_reward", "mean reward", ".2f")]


def bench_html(d, plt):
    probs = d.get("problems", [])
    parts = [f"<h1>kforge bench: {esc(d.get('suite'))}</h1>",
             "<p>" + " &middot; ".join(f"{k} <code>{esc(d.get(k))}</code>" for k in ("protocol", "device", "torch", "commit", "date")) + "</p>",
             f"<p>{esc(d.get('method'))}</p>"]
    if d.get("predicted"):
        parts.append('<p class="note">No GPU: candidates were built, correctness is NOT verified and times are '
                     'PREDICTED by the roofline cost model.</p>')
    summary = d.get("summary", {})
    parts.append("<h2>Summary per level</h2>")
    parts.append(table(["level"] + [h for _, h, _ in _METRICS],
                       [[esc(lv)] + [fmt_num(m.get(k), ".0f" if spec == "d" else spec) for k, _, spec in _METRICS] for lv, m in summary.items()]))
    levels = {}
    for p in probs:
        levels.setdefault(p.get("level", ""), []).append(p)
    for lv, rows in levels.items():
        parts.append(f"<h2>{esc(lv or 'problems')} ({len(rows)} problems)</h2>")
        body, classes = [], []
        for r in rows:
            se, sc = ratio(r.get("t_eager_ms"), r.get("t_candidate_ms")), ratio(r.get("t_compile_ms"), r.get("t_candidate_ms"))
            body.append([esc(r.get("problem")), esc(r.get("outcome")), fmt_num(r.get("correct")),
                         fmt_ms(r.get("t_candidate_ms")), fmt_ms(r.get("t_eager_ms")), fmt_ms(r.get("t_compile_ms")),
                         fmt_ms(r.get("t_floor_ms")), fmt_num(se), fmt_num(sc),
                         fmt_num(r.get("build_seconds"), ".1f"), fmt_num(r.get("verify_seconds"), ".1f"),
                         fmt_num(r.get("max_abs_err"), ".2g")])
            classes.append("fail" if r.get("outcome") != "ok" else ("fast" if (se or 0) > 1 else "slow" if se else ""))
        parts.append(table(["problem", "outcome", "correct", "candidate", "eager", "compile", "floor",
                            "speed-up vs eager", "speed-up vs compile", "build s", "verify s", "max abs err"],
                           body, classes, [r.get("problem") for r in rows]))
        if plt is not None:
            parts.append(img(time_plot(plt, rows, f"{lv}: time per problem"), f"{lv} times"))
            parts.append(img(speedup_plot(plt, rows, f"{lv}: speed-up per problem"), f"{lv} speed-ups"))
    return parts


def optimize_html(d, plt):
    res = d.get("result") or {}
    name = d.get("name") or os.path.basename(str(d.get("problem", "")))
    parts = [f"<h1>kforge optimize: {esc(name)}</h1>",
             "<p>" + " &middot; ".join(f"{k} <code>{esc(d.get(k))}</code>" for k in ("protocol", "device", "torch_version", "precision")) + "</p>"]
    if res.get("predicted"):
        parts.append('<p class="note">No GPU: times are PREDICTED by the roofline cost model and correctness is NOT verified.</p>')
    row = {"problem": name, "t_candidate_ms": _ms(res.get("t_candidate")), "t_eager_ms": _ms(res.get("t_eager")),
           "t_compile_ms": _ms(res.get("t_compile")), "t_floor_ms": _ms(d.get("predicted_floor_seconds"))}
    parts.append("<h2>Result</h2>")
    parts.append(table(["problem", "outcome", "verified", "candidate", "eager", "compile", "floor", "speed-up vs eager",
                        "speed-up vs compile", "max abs err"],
                       [[esc(name), esc(res.get("outcome")), fmt_num(res.get("verified")), fmt_ms(row["t_candidate_ms"]),
                         fmt_ms(row["t_eager_ms"]), fmt_ms(row["t_compile_ms"]), fmt_ms(row["t_floor_ms"]),
                         fmt_num(ratio(row["t_eager_ms"], row["t_candidate_ms"])),
                         fmt_num(ratio(row["t_compile_ms"], row["t_candidate_ms"])), fmt_num(res.get("max_abs_err"), ".2g")]],
                       row_ids=[name]))
    if plt is not None:
        parts.append(img(time_plot(plt, [row], "time per call"), "times"))
    kernels = d.get("kernels", [])
    parts.append(f"<h2>Kernels ({len(kernels)})</h2>")
    parts.append(table(["kernel", "impl", "strategy", "ops", "predicted", "bound"],
                       [[esc(k.get("name")), esc(k.get("impl")), esc(k.get("strategy")), esc(", ".join(k.get("ops", []))),
                         fmt_ms(_ms(k.get("predicted_seconds"))), esc(k.get("bound"))] for k in kernels]))
    agent = d.get("agent") or {}
    if agent:
        parts.append(f"<h2>The agent's turns ({esc(agent.get('turns'))} of at most {esc(agent.get('max_turns'))})</h2>")
        parts.append(f"<p>policy <code>{esc(agent.get('policy'))}</code>, evaluator {esc(agent.get('evaluator'))}, "
                     f"{esc(agent.get('evaluations'))} evaluations, reward {esc(agent.get('reward'))}, seed {esc(agent.get('seed'))}</p>")
        parts.append("<ol>" + "".join(f"<li>{esc(a)}</li>" for a in agent.get("actions", [])) + "</ol>")
    stages = d.get("stages_seconds") or {}
    build = d.get("build") or {}
    parts.append("<h2>Build and stage times</h2>")
    parts.append(table(["stage", "seconds"], [[esc(k), fmt_num(v, ".2f")] for k, v in stages.items()] +
                       [["nvcc build", fmt_num(build.get("seconds"), ".2f")]]))
    return parts


def _ms(seconds):
    return seconds * 1000 if isinstance(seconds, (int, float)) and math.isfinite(seconds) else None


def render(d):
    """The whole page for a bench or optimize JSON object; ValueError for another format."""
    fmt = d.get("format", "")
    plt = _matplotlib()
    if fmt.startswith("kforge.bench/"):
        parts = bench_html(d, plt)
    elif fmt.startswith("kforge.report/"):
        parts = optimize_html(d, plt)
    else:
        raise ValueError(f"not a kforge bench or optimize report (format {fmt!r})")
    if plt is None:
        parts.insert(1, '<p class="note">matplotlib is not installed: tables only '
                        '(pip install -r python/requirements/frontdoor.txt).</p>')
    title = esc(parts[0].replace("<h1>", "").replace("</h1>", ""))
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title><style>{_CSS}</style></head>'
            f'<body>\n' + "\n".join(parts) + "\n<p><small>generated by <code>python3 -m kforge.report</code></small></p>"
            "\n</body></html>\n")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m kforge.report", description=__doc__.splitlines()[0])
    p.add_argument("json", help="a kforge bench (bench.json) or optimize (report.json) JSON file")
    p.add_argument("-o", "--out", help="the HTML file (default: report.html beside the JSON)")
    a = p.parse_args(argv)
    try:
        with open(a.json) as f:
            d = json.load(f)
        page = render(d)
    except (OSError, ValueError) as e:
        print(f"kforge report: error: {a.json}: {e}", file=sys.stderr)
        return 2
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(a.json)), "report.html")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(page)
    os.replace(tmp, out)
    print(f"wrote {out}")
    return 0 if _matplotlib() is not None else 3


if __name__ == "__main__":
    sys.exit(main())
