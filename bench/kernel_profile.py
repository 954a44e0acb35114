"""Where a candidate's time goes, kernel by kernel, next to eager's and torch.compile's: each variant's
forward run under torch.profiler (CUPTI sees kforge's kernels and the libraries' alike), after warm-up;
prints per variant the CUDA kernels with their total and per-call device time, largest first.

    python3 bench/kernel_profile.py --cands DIR PROBLEM.py [PROBLEM.py ...]
        DIR: a `kforge bench --out` directory (<level>/<stem>/model_new.py)
"""
import argparse
import importlib.util
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def kernel_table(fn, inputs, calls=5):
    with torch.no_grad():
        for _ in range(3):
            fn(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn(*inputs)
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = e.cuda_time_total
        if t > 0:
            rows.append((t / calls / 1e3, e.count / calls, e.key))
    rows.sort(reverse=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cands", required=True)
    ap.add_argument("problems", nargs="+")
    args = ap.parse_args()
    for p in args.problems:
        stem = os.path.basename(p)[:-3]
        level = os.path.basename(os.path.dirname(p))
        ref_mod = load(p, "ref")
        cand_mod = load(os.path.join(args.cands, level, stem, "model_new.py"), "cand")
        torch.manual_seed(42)
        with torch.device("cuda"):
            ref = ref_mod.Model(*ref_mod.get_init_inputs()).eval()
            cand = cand_mod.ModelNew(*ref_mod.get_init_inputs()).eval()
        cand.load_state_dict(ref.state_dict())
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref_mod.get_inputs()]
        print("==== %s/%s" % (level, stem))
        for name, fn in (("candidate", cand), ("eager", ref), ("compile", torch.compile(ref))):
            rows = kernel_table(fn, inputs)
            total = sum(r[0] for r in rows)
            with torch.no_grad():
                out = fn(*inputs)
            layout = ""
            if isinstance(out, torch.Tensor):  # channels-last outputs skip the transpose back
                layout = "  output %s stride %s" % (tuple(out.shape), out.stride())
            print("  %-9s %8.3f ms of kernels per forward%s" % (name, total, layout))
            for ms, count, key in rows[:10]:
                print("    %8.3f ms  x%-4g %s" % (ms, count, key[:110]))
        del ref, cand
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
