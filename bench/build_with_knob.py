"""Builds problems with one codegen knob set by hand on the kernels of one strategy, for experiments the
default planner would not make (e.g. a 2-d conv channels-last), into a `kforge bench --out`-shaped
directory that bench/kernel_profile.py reads:

    python3 bench/build_with_knob.py --out DIR --strategy cudnn_conv --knob channels_last=1 PROBLEM.py ...

Each problem: `kforge plan` (cuda-agent protocol), the knob set on every kernel of that strategy,
`kforge build --schedule` into DIR/<level>/<stem>/. Prints one line per problem; exit 1 if any failed.
"""
import argparse
import json
import os
import subprocess
import sys

KFORGE = os.environ.get("KFORGE_BIN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../build/kforge"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--strategy", required=True, help="schedule strategy whose kernels get the knob")
    ap.add_argument("--knob", required=True, help="NAME=INT")
    ap.add_argument("--protocol", default="cuda-agent")
    ap.add_argument("problems", nargs="+")
    args = ap.parse_args()
    name, _, value = args.knob.partition("=")
    if not name or not value.lstrip("-").isdigit():
        ap.error("--knob takes NAME=INT, e.g. channels_last=1")
    failed = 0
    for p in args.problems:
        stem = os.path.basename(p)[:-3]
        level = os.path.basename(os.path.dirname(os.path.abspath(p)))
        out = os.path.join(args.out, level, stem)
        os.makedirs(out, exist_ok=True)
        sched_path = os.path.join(out, "schedule.knob.json")
        r = subprocess.run([KFORGE, "plan", p, "--protocol", args.protocol, "--out", sched_path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("%s: plan failed: %s" % (stem, (r.stderr or r.stdout).strip()[-300:]))
            failed += 1
            continue
        with open(sched_path) as f:
            sched = json.load(f)
        hit = [k for k in sched["kernels"] if k.get("strategy") == args.strategy]
        for k in hit:
            k.setdefault("knobs", {})[name] = int(value)
        with open(sched_path, "w") as f:
            json.dump(sched, f)
        r = subprocess.run([KFORGE, "build", p, "--schedule", sched_path, "--protocol", args.protocol, "--out", out,
                            "--force"], capture_output=True, text=True)
        ok = r.returncode == 0
        failed += not ok
        print("%s: %d kernel(s) with %s; build %s" % (stem, len(hit), args.knob,
                                                       "ok" if ok else "failed: " + (r.stderr or r.stdout)[-300:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
