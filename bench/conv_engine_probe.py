"""Which cuDNN engine does PyTorch run for a conv, and which does kforge's candidate run? For each
problem given, two fresh processes: the reference Model's forward with PyTorch's and cuDNN's logging
on, and the candidate's with KFORGE_CUDNN_LOG=1; prints the engine lines of each, and whether the
conv outputs agree bitwise. For diagnosing kernelbench-protocol conv mismatches (bench/NOTES.md).

    python3 bench/conv_engine_probe.py --cands DIR PROBLEM.py [PROBLEM.py ...]
"""
import argparse
import os
import re
import subprocess
import sys

RUN = r'''
import importlib.util, sys, torch
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m
mod = load(sys.argv[1], "cand" if sys.argv[2] == "candidate" else "ref")
with torch.device("cuda"):
    torch.manual_seed(42)
    model = (mod.ModelNew if sys.argv[2] == "candidate" else mod.Model)(*mod.get_init_inputs())
    model.train()
    torch.manual_seed(1000)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
with torch.no_grad():
    out = model(*inputs)
torch.cuda.synchronize()
torch.save(out.detach().cpu(), sys.argv[3])
'''

ENGINE = re.compile(r"(eng\d+|engine \d+|ENGINE_GLOBAL_INDEX|Verifying|kforge cudnn|algo)", re.I)


def run(path, which, out_file, env):
    r = subprocess.run([sys.executable, "-c", RUN, path, which, out_file], capture_output=True, text=True,
                       env=env, timeout=300)
    lines = [l for l in (r.stdout + r.stderr).splitlines() if ENGINE.search(l)]
    return r.returncode, lines, (r.stderr or "")[-400:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cands", required=True, help="a kforge bench --out directory (<level>/<stem>/model_new.py)")
    ap.add_argument("problems", nargs="+")
    args = ap.parse_args()
    import torch
    for p in args.problems:
        stem = os.path.basename(p)[:-3]
        level = os.path.basename(os.path.dirname(p))
        cand = os.path.join(args.cands, level, stem, "model_new.py")
        ref_env = dict(os.environ, TORCH_CUDNN_V8_API_DEBUG="1", CUDNN_FRONTEND_LOG_INFO="1",
                       CUDNN_FRONTEND_LOG_FILE="stderr")
        cand_env = dict(os.environ, KFORGE_CUDNN_LOG="1")
        rc1, ref_lines, ref_err = run(p, "reference", "/tmp/probe_ref.pt", ref_env)
        rc2, cand_lines, cand_err = run(cand, "candidate", "/tmp/probe_cand.pt", cand_env)
        print("==== %s/%s" % (level, stem))
        print("reference (rc %d):" % rc1)
        for l in ref_lines[:12]:
            print("   ", l[:200])
        if rc1:
            print("   ", ref_err)
        print("candidate (rc %d):" % rc2)
        for l in cand_lines[:12]:
            print("   ", l[:200])
        if rc2:
            print("   ", cand_err)
        if rc1 == 0 and rc2 == 0:
            a, b = torch.load("/tmp/probe_ref.pt"), torch.load("/tmp/probe_cand.pt")
            d = (a.double() - b.double()).abs()
            print("outputs: bitwise equal %s, max abs diff %.3g, allclose(1e-4) %s" % (
                torch.equal(a, b), float(d.max()), torch.allclose(a, b, atol=1e-4, rtol=1e-4)))


if __name__ == "__main__":
    main()
