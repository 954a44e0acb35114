"""kforge's cold build of each problem, alone on the machine, beside torch.compile's cold first call of the
same model in a fresh process (issue #22 item 5: "kforge's cold build (16 cores) is at most torch.compile's
cold first call on the same model, measured in the same run; no model above 60 s").

    python3 bench/build_time.py --suite .gpu/kb/zoo [--only a,b] --json OUT.json [--time-limit 420]

For each problem, one after another (nothing else runs beside it):
- kforge: `kforge build PROBLEM` (import, plan, codegen, nvcc on every core) with a build cache that holds
  only kforge's runtime units (compiled once per install, by a seed build of a small conv + linear model
  at the start; their time is printed apart); wall seconds, with the stages report.json records;
- torch.compile: a fresh Python process that imports torch and the problem (not timed), builds the model
  on the GPU, then times `torch.compile(model)(*inputs)` to the end of its kernels, with empty Inductor
  and Triton caches (kforge.candidate_worker.precompile: the call bench's baselines worker times).

Prints a line per problem, then a table; writes the records as JSON.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

KFORGE = os.environ.get("KFORGE_BIN", "build/kforge")
PYTHON = os.environ.get("KFORGE_PYTHON", sys.executable)
HERE = os.path.dirname(os.path.abspath(__file__))

SEED_PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """A small conv + linear model: its build compiles every runtime unit kforge links (cuDNN, cuBLAS)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(32, 64, 3)  # a reduction of 288: cuDNN's (kforge's own implicit GEMM takes <= 160)
        self.fc = nn.Linear(64 * 6 * 6, 4)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def get_inputs():
    return [torch.randn(2, 32, 8, 8)]


def get_init_inputs():
    return []
'''

COMPILE_COLD = '''import json, sys, time
sys.path.insert(0, sys.argv[3])
import torch
from kforge.harness import load_module
from kforge.candidate_worker import precompile
from kforge.protocol import protocol_from
mod = load_module(sys.argv[1], "kforge_build_time_ref")
seconds = precompile(mod, protocol_from(sys.argv[2]), torch.device("cuda"))
print(json.dumps({"compile_cold_seconds": seconds}))
'''


def kforge_build(problem, cache, out, protocol, timeout):
    env = dict(os.environ, KFORGE_CACHE=cache)
    t0 = time.time()
    r = subprocess.run([KFORGE, "build", problem, "--out", out, "--force", "--protocol", protocol], env=env,
                       capture_output=True, text=True, timeout=timeout)
    rec = {"build_seconds": time.time() - t0, "built": r.returncode == 0}
    if r.returncode != 0:
        rec["message"] = (r.stderr or r.stdout).strip()[-400:]
        return rec
    try:
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        rec["stages"] = report.get("stages_seconds", {})
        b = report.get("build", {})
        rec.update({k: b.get(k) for k in ("units_compiled", "nvcc_seconds", "link_seconds", "cache_hits")})
        rec["kernels"] = len(report.get("kernels", []))
    except (OSError, ValueError) as e:
        rec["message"] = "report.json unreadable: %s" % e
    return rec


def compile_cold(problem, protocol, timeout):
    work = tempfile.mkdtemp(prefix="kf-compile-cold-")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(work, "inductor"),
               TRITON_CACHE_DIR=os.path.join(work, "triton"))
    try:
        r = subprocess.run([PYTHON, "-c", COMPILE_COLD, problem, protocol, os.path.join(HERE, "..", "python")],
                           env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"compile_cold_seconds": None, "compile_message": "past %d s" % timeout}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"compile_cold_seconds": None, "compile_message": (r.stderr or r.stdout).strip()[-400:]}


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", required=True, help="a folder of problem files")
    ap.add_argument("--only", default="", help="comma-separated problem names (file stems)")
    ap.add_argument("--json", required=True, help="write the records here")
    ap.add_argument("--protocol", default="cuda-agent", choices=("cuda-agent", "kernelbench"))
    ap.add_argument("--time-limit", type=float, default=420, help="start no new problem after this many seconds")
    ap.add_argument("--no-compile", action="store_true", help="time kforge's builds only (a machine without a GPU)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.suite):
        sys.exit("build_time: --suite %s is not a folder of problem files" % args.suite)
    names = sorted(f[:-3] for f in os.listdir(args.suite) if f.endswith(".py"))
    if args.only:
        wanted = args.only.split(",")
        missing = [n for n in wanted if n not in names]
        if missing:
            sys.exit("build_time: --only names problems %s has not: %s" % (args.suite, ", ".join(missing)))
        names = [n for n in names if n in wanted]
    work = tempfile.mkdtemp(prefix="kf-build-time-")
    seed_cache = os.path.join(work, "seed-cache")
    with open(os.path.join(work, "seed_conv_linear.py"), "w") as f:
        f.write(SEED_PROBLEM)
    seed = kforge_build(os.path.join(work, "seed_conv_linear.py"), seed_cache, os.path.join(work, "seed"),
                        args.protocol, 900)
    if not seed["built"]:
        sys.exit("build_time: the seed build failed: %s" % seed.get("message"))
    print("runtime units (once per install; the seed build): %.1f s, %s units, %.1f nvcc core-seconds" %
          (seed["build_seconds"], seed.get("units_compiled"), seed.get("nvcc_seconds") or 0), flush=True)
    start = time.time()
    records, skipped = [], []
    for name in names:
        if time.time() - start > args.time_limit:
            skipped.append(name)
            continue
        problem = os.path.join(args.suite, name + ".py")
        cache = os.path.join(work, "cache-" + name)
        shutil.copytree(seed_cache, cache)
        rec = {"problem": name}
        rec.update(kforge_build(problem, cache, os.path.join(work, "out-" + name), args.protocol, 900))
        shutil.rmtree(cache, ignore_errors=True)
        if not args.no_compile:
            rec.update(compile_cold(problem, args.protocol, 900))
        records.append(rec)
        st = rec.get("stages", {})
        print("%-40s kforge %6s s (import %s, plan %s, codegen+nvcc %s; %s units, %s nvcc core-s)  compile cold %6s s"
              % (name[:40], fmt(rec["build_seconds"]), fmt(st.get("import")), fmt(st.get("plan")),
                 fmt(st.get("codegen_and_build")), rec.get("units_compiled", "-"), fmt(rec.get("nvcc_seconds")),
                 fmt(rec.get("compile_cold_seconds"))), flush=True)
    shutil.rmtree(work, ignore_errors=True)
    built = [r for r in records if r["built"]]
    paired = [r for r in built if r.get("compile_cold_seconds") is not None]
    summary = {
        "problems": len(records), "built": len(built), "skipped_for_time_limit": skipped,
        "runtime_units_seconds": seed["build_seconds"],
        "build_median_seconds": statistics.median([r["build_seconds"] for r in built]) if built else None,
        "build_max_seconds": max([r["build_seconds"] for r in built], default=None),
        "over_60_seconds": [r["problem"] for r in built if r["build_seconds"] > 60],
        "compile_cold_median_seconds":
            statistics.median([r["compile_cold_seconds"] for r in paired]) if paired else None,
        "build_within_compile_cold": sum(r["build_seconds"] <= r["compile_cold_seconds"] for r in paired),
        "paired": len(paired),
    }
    with open(args.json, "w") as f:
        json.dump({"format": "kforge-build-time-1", "protocol": args.protocol, "cores": os.cpu_count(),
                   "kforge": KFORGE, "summary": summary, "records": records}, f, indent=1)
    print("\n%d problems, %d built; kforge build median %s s, max %s s, above 60 s: %s; torch.compile cold median "
          "%s s; build <= compile cold on %d/%d; skipped for the time limit: %d"
          % (len(records), len(built), fmt(summary["build_median_seconds"]), fmt(summary["build_max_seconds"]),
             ", ".join(summary["over_60_seconds"]) or "none", fmt(summary["compile_cold_median_seconds"]),
             summary["build_within_compile_cold"], len(paired), len(skipped)))
    return 0 if len(built) == len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
