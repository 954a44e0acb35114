"""python -m kforge.llm_agent (and `kforge agent`): run episodes, make workspaces, convert, filter and
validate trajectories. docs/agent-llm.md is the guide."""
import argparse
import json
import os
import sys

from . import SCHEMA_NAME
from .client import ChatClient
from .evaluation import KforgeHarness
from .loop import TURNS, Budgets, Episode
from . import convert, suite as suitelib, trajectory
from .workspace import create as create_workspace

SUBCOMMANDS = ("workspace", "convert", "filter", "validate", "report")


def run_parser():
    ap = argparse.ArgumentParser(
        prog="kforge agent",
        description="A language model writes and tunes CUDA kernels for a problem in a CUDA-Agent workspace, over an "
                    "OpenAI-compatible chat-completions server. Other commands: kforge agent {workspace,convert,"
                    "filter,validate,report} --help.")
    ap.add_argument("problem", nargs="?", help="KernelBench-format problem (.py)")
    ap.add_argument("--suite", help="a directory of problems (or of level*/ directories): one episode each, then the table")
    ap.add_argument("--levels", help="comma-separated level directories of --suite")
    ap.add_argument("--only", help="comma-separated problem names (file stems) of --suite")
    ap.add_argument("--llm", required=True, help="the server's base URL (http://host:8000/v1)")
    ap.add_argument("--model", required=True, help="the model name the server knows")
    ap.add_argument("--api-key-env", default="OPENAI_API_KEY",
                    help="the environment variable that holds the API key (never written anywhere)")
    ap.add_argument("--out", help="the run directory (default: out/agent-<problem> or out/agent-suite)")
    ap.add_argument("--mode", choices=sorted(TURNS), default="eval",
                    help="turn budget of the paper: train 150, eval 200 (default eval)")
    ap.add_argument("--max-turns", type=int, help="turns, at most (overrides --mode)")
    ap.add_argument("--context-tokens", type=int, default=131072, help="the model's context (default 128k)")
    ap.add_argument("--max-response-tokens", type=int, default=8192)
    ap.add_argument("--max-total-tokens", type=int, help="prompt + completion tokens of the episode, at most")
    ap.add_argument("--time-limit", type=float, help="seconds of wall time per episode, at most")
    ap.add_argument("--request-timeout", type=float, default=600.0, help="seconds per HTTP request")
    ap.add_argument("--max-retries", type=int, default=6, help="retries of a request on 429/5xx/timeouts")
    ap.add_argument("--backoff", type=float, default=1.0, help="first back-off delay in seconds (doubles)")
    ap.add_argument("--temperature", type=float)
    ap.add_argument("--logprobs", action="store_true", help="ask the server for log-probs (recorded)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--protocol", default="cuda-agent", choices=["cuda-agent", "kernelbench"])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                    help="where verify/profile run: cuda needs a GPU; cpu and a machine without one answer no_gpu")
    ap.add_argument("--trials", type=int, default=30, help="timed trials per variant of profile")
    ap.add_argument("--start-from-kforge", action="store_true",
                    help="model_new.py starts as kforge's own program (kforge export), for the model to improve")
    ap.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    ap.add_argument("--force", action="store_true", help="discard an existing run in --out")
    ap.add_argument("--no-bwrap", action="store_true", help="run the shell tool without bubblewrap")
    ap.add_argument("--compare-bench", help="a `kforge bench --json` report of the same suite: kforge's row of the table")
    ap.add_argument("--json", help="also write the summary (or the suite's table) as JSON here")
    ap.add_argument("--test-harness-script",
                    help="FOR TESTS ONLY: replace the GPU harness with scripted results (kforge/llm_agent/testing.py); "
                         "every record says scripted_harness")
    return ap


def make_client(a):
    return ChatClient(a.llm, a.model, api_key_env=a.api_key_env, timeout=a.request_timeout, max_retries=a.max_retries,
                      backoff_base=a.backoff, seed=a.seed)


def make_harness(a):
    if a.test_harness_script:
        from .testing import ScriptedHarness
        return ScriptedHarness(a.test_harness_script)
    return KforgeHarness(trials=a.trials)


def budgets(a):
    return Budgets(max_turns=a.max_turns or TURNS[a.mode], context_tokens=a.context_tokens,
                   max_response_tokens=a.max_response_tokens, max_total_tokens=a.max_total_tokens,
                   time_limit_s=a.time_limit)


def one_episode(a, problem, out):
    ep = Episode(problem, out, make_client(a), make_harness(a), budgets(a), protocol=a.protocol, device=a.device,
                 seed=a.seed, temperature=a.temperature, logprobs=a.logprobs, start_from_kforge=a.start_from_kforge,
                 use_bwrap=not a.no_bwrap, log=lambda s: print("kforge agent: " + s, file=sys.stderr))
    return ep.run(resume=a.resume, force=a.force)


def main_run(argv):
    a = run_parser().parse_args(argv)
    if bool(a.problem) == bool(a.suite):
        print("kforge agent: error: give a PROBLEM or --suite DIR (one of them)", file=sys.stderr)
        return 2
    if a.problem:
        if not os.path.isfile(a.problem):
            print("kforge agent: error: no such file: %s" % a.problem, file=sys.stderr)
            return 2
        out = a.out or os.path.join("out", "agent-" + os.path.splitext(os.path.basename(a.problem))[0])
        try:
            end = one_episode(a, a.problem, out)
        except FileExistsError as e:
            print("kforge agent: error: %s" % e, file=sys.stderr)
            return 2
        print("kforge agent: %s: reward %s, %d turns, %d tokens, stop: %s%s\n  trajectory: %s" % (
            os.path.basename(a.problem), end["reward"], end["turns"], end["total_tokens"], end["stop_reason"],
            ("; " + end["note"]) if end.get("note") else "", os.path.join(out, "trajectory.jsonl")))
        if end.get("best_path"):
            print("  best candidate: %s" % end["best_path"])
        if a.json:
            with open(a.json, "w") as f:
                json.dump(end, f, indent=1)
        return 0
    levels = set(a.levels.split(",")) if a.levels else None
    only = set(a.only.split(",")) if a.only else None
    probs = suitelib.suite_problems(a.suite, levels, only)
    if not probs:
        print("kforge agent: error: no problems in %s" % a.suite, file=sys.stderr)
        return 2
    out = a.out or os.path.join("out", "agent-suite")
    rows = []
    for level, stem, f in probs:
        d = os.path.join(out, level, stem) if level else os.path.join(out, stem)
        try:
            one_episode(a, f, d)
        except FileExistsError as e:
            print("kforge agent: error: %s" % e, file=sys.stderr)
            return 2
        rows.append(suitelib.row_of_episode(os.path.join(d, "trajectory.jsonl"), level, stem))
        print("kforge agent: %s/%s: reward %s" % (level, stem, rows[-1]["reward"]), file=sys.stderr)
    return report(rows, a.compare_bench, a.json, out)


def report(rows, compare_bench, json_out, out):
    summaries = [suitelib.table(rows, "agent")]
    predicted = False
    if compare_bench:
        brows, predicted = suitelib.bench_rows(compare_bench, {r["problem"] for r in rows})
        summaries.append(suitelib.table(brows, "kforge (bench%s)" % (", predicted: not verified" if predicted else "")))
    print(suitelib.render(summaries))
    if any(r.get("scripted_harness") for r in rows):
        print("note: results from the scripted harness (tests only): not measured")
    if not any(r.get("verified_any") for r in rows):
        print("note: nothing was verified (no GPU?): pass rates are 0 by construction")
    doc = {"format": "kforge.agent_suite/1", "summaries": summaries, "problems": rows}
    with open(os.path.join(out, "suite.json"), "w") as f:
        json.dump(doc, f, indent=1)
    if json_out:
        with open(json_out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


def main_workspace(argv):
    ap = argparse.ArgumentParser(prog="kforge agent workspace",
                                 description="write a CUDA-Agent workspace for a problem (what kforge export "
                                             "--format cuda-agent calls)")
    ap.add_argument("problem")
    ap.add_argument("--out", required=True)
    ap.add_argument("--model-new", help="model_new.py's text comes from this file (default: a stub)")
    ap.add_argument("--protocol", default="cuda-agent")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args(argv)
    text = open(a.model_new).read() if a.model_new else None
    try:
        ws = create_workspace(a.out, a.problem, a.protocol, text, force=a.force)
    except FileExistsError as e:
        print("kforge agent workspace: error: %s" % e, file=sys.stderr)
        return 2
    print(ws.run_dir)
    return 0


def main_convert(argv, filter_only=False):
    ap = argparse.ArgumentParser(prog="kforge agent " + ("filter" if filter_only else "convert"),
                                 description="trajectories to OpenAI-messages multi-turn rows (one per episode), "
                                             "as JSON lines (OpenRLHF) or Parquet (-o FILE.parquet: veRL)" +
                                             (", keeping the episodes the RFT filters keep" if filter_only else ""))
    ap.add_argument("trajectories", nargs="+")
    ap.add_argument("-o", "--out", required=True, help="FILE.jsonl, or FILE.parquet (needs pyarrow)")
    ap.add_argument("--format", default="openai-messages", choices=["openai-messages"])
    ap.add_argument("--rft", action="store_true", help="apply the rejection fine-tuning filters")
    ap.add_argument("--loop-repeats", type=int, default=3)
    a = ap.parse_args(argv)
    eps = [convert.episode(p) for p in a.trajectories]
    dropped = []
    if filter_only or a.rft:
        eps, dropped = convert.rft_filter(eps, a.loop_repeats)
    try:
        convert.write_rows([convert.to_openai_messages(e) for e in eps], a.out)
    except convert.MissingDependency as e:
        print("kforge agent convert: error: %s" % e, file=sys.stderr)
        return 2
    for ep, why in dropped:
        print("dropped %s: %s" % (ep["path"], why), file=sys.stderr)
    print("kept %d, dropped %d; wrote %s" % (len(eps), len(dropped), a.out))
    return 0


def main_validate(argv):
    ap = argparse.ArgumentParser(prog="kforge agent validate", description="check trajectories against the schema")
    ap.add_argument("trajectories", nargs="+")
    a = ap.parse_args(argv)
    import jsonschema
    schema = json.load(open(os.path.join(os.path.dirname(__file__), "trajectory.schema.json")))
    v = jsonschema.Draft202012Validator(schema)
    bad = 0
    for p in a.trajectories:
        for k, e in enumerate(trajectory.load(p)):
            for err in v.iter_errors(e):
                bad += 1
                print("%s: line %d: %s" % (p, k + 1, err.message))
    print("%s: %s" % (SCHEMA_NAME, "valid" if not bad else "%d errors" % bad))
    return 0 if not bad else 1


def main_report(argv):
    ap = argparse.ArgumentParser(prog="kforge agent report", description="the suite table of an existing run")
    ap.add_argument("out")
    ap.add_argument("--compare-bench")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = []
    for root, _, files in sorted(os.walk(a.out)):
        if "trajectory.jsonl" in files:
            rel = os.path.relpath(root, a.out).split(os.sep)
            level, stem = (rel[0], rel[-1]) if len(rel) > 1 else ("", rel[-1])
            rows.append(suitelib.row_of_episode(os.path.join(root, "trajectory.jsonl"), level, stem))
    return report(rows, a.compare_bench, a.json, a.out)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        cmd, rest = argv[0], argv[1:]
        return {"workspace": main_workspace, "convert": main_convert,
                "filter": lambda r: main_convert(r, filter_only=True), "validate": main_validate,
                "report": main_report}[cmd](rest)
    return main_run(argv)


if __name__ == "__main__":
    sys.exit(main())
