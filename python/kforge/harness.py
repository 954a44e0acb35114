"""GPU harness worker: verifies a candidate ModelNew against the problem's Model and times
candidate, eager and torch.compile side by side. One process per GPU; a CUDA fault poisons the
process, so the caller restarts it.

    python3 -m kforge.harness --problem P.py --candidate model_new.py [--protocol cuda-agent] [--profile]

prints one JSON result (the result type of DESIGN.md) on the last line of stdout.
"""
import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import time
import traceback

PROTOCOLS = {
    # name: (model mode, atol, rtol, number of input sets)
    "cuda-agent": ("eval", 1e-2, 1e-2, 5),
    "kernelbench": ("train", 1e-4, 1e-4, 5),
}


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def on_device(device):
    """A context in which factory functions allocate on `device` (torch 2.x), so that inputs and
    weights of multi-gigabyte problems are made by the GPU's generator, not the CPU's."""
    import contextlib
    import torch
    if hasattr(torch, "device") and hasattr(torch.device, "__enter__"):
        return torch.device(device)
    return contextlib.nullcontext()


def seeded_inputs(mod, seed, device):
    import torch
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    out = []
    with on_device(device):
        made = mod.get_inputs()
    for t in made:
        out.append(t.to(device) if isinstance(t, torch.Tensor) else t)  # dtypes kept (int targets, bool masks)
    return out


def build_models(ref_mod, cand_mod, protocol, device):
    import torch
    mode = PROTOCOLS[protocol][0]
    init = ref_mod.get_init_inputs()
    with on_device(device):
        torch.manual_seed(42)
        ref = ref_mod.Model(*init)
        torch.manual_seed(42)
        cand = cand_mod.ModelNew(*init) if cand_mod is not None else None
    if mode == "eval":
        ref.eval()
        if cand is not None:
            cand.load_state_dict(ref.state_dict())
            cand.eval()
    else:
        ref.train()
        if cand is not None:
            cand.train()
    return ref.to(device), cand.to(device) if cand is not None else None


def poison_allocator(device, nbytes=1 << 30):
    """Fills a block of the caching allocator with NaN and frees it, so that outputs a candidate
    allocates with torch.empty and forgets to write read as NaN rather than stale results."""
    import torch
    free, _ = torch.cuda.mem_get_info(device)
    n = min(nbytes, max(free // 4, 1 << 20)) // 4
    block = torch.full((n,), float("nan"), dtype=torch.float32, device=device)
    del block


def flatten(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            res.extend(flatten(o))
        return res
    return [out]


def compare(ref_out, cand_out, inputs, atol, rtol):
    """Returns (ok, max_abs_err, max_rel_err, message)."""
    import torch
    r = flatten(ref_out)
    c = flatten(cand_out)
    if len(r) != len(c):
        return False, None, None, "candidate returned %d outputs, reference %d" % (len(c), len(r))
    max_abs = 0.0
    max_rel = 0.0
    for i, (a, b) in enumerate(zip(r, c)):
        if not isinstance(b, torch.Tensor):
            return False, None, None, "output %d is %s, not a tensor" % (i, type(b).__name__)
        if tuple(a.shape) != tuple(b.shape):
            return False, None, None, "output %d has shape %s, expected %s" % (i, tuple(b.shape), tuple(a.shape))
        if a.dtype != b.dtype:
            return False, None, None, "output %d has dtype %s, expected %s" % (i, b.dtype, a.dtype)
        for x in inputs:
            if isinstance(x, torch.Tensor) and b.numel() and x.numel() and b.data_ptr() == x.data_ptr():
                return False, None, None, "output %d aliases an input" % i
        bf = b.double()
        af = a.double()
        if not torch.isfinite(bf).all() and not torch.equal(torch.isfinite(bf), torch.isfinite(af)):
            return False, None, None, "output %d has NaN or Inf where the reference has none" % i
        diff = (bf - af).abs()
        diff = torch.where(torch.isfinite(diff), diff, torch.zeros_like(diff))
        if diff.numel():
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / af.abs().clamp_min(1e-12)).max()))
        if not torch.allclose(bf, af, atol=atol, rtol=rtol, equal_nan=False):
            return False, max_abs, max_rel, "output %d differs: max abs err %.3g, max rel err %.3g" % (i, max_abs, max_rel)
    return True, max_abs, max_rel, ""


def verify(ref_mod, cand_mod, protocol, device, seeds=None):
    import torch
    mode, atol, rtol, n = PROTOCOLS[protocol]
    seeds = seeds or [1000 + 7 * k for k in range(n)]
    ref, cand = build_models(ref_mod, cand_mod, protocol, device)
    worst_abs = 0.0
    worst_rel = 0.0
    with torch.no_grad():
        for seed in seeds:
            inputs = seeded_inputs(ref_mod, seed, device)
            ref_out = ref(*inputs)
            torch.cuda.synchronize(device)
            poison_allocator(device)
            cand_out = cand(*inputs)
            torch.cuda.synchronize(device)
            ok, a, r, msg = compare(ref_out, cand_out, inputs, atol, rtol)
            if a is not None:
                worst_abs = max(worst_abs, a)
                worst_rel = max(worst_rel, r)
            if not ok:
                return {"outcome": "wrong_answer", "max_abs_err": a, "max_rel_err": r, "message": "seed %d: %s" % (seed, msg)}
    return {"outcome": "ok", "max_abs_err": worst_abs, "max_rel_err": worst_rel, "message": ""}


class StreamWatch:
    """While active, counts the CUDA streams code makes (torch.cuda.Stream) or switches to
    (torch.cuda.stream, torch.cuda.set_stream) other than the one current when it started: work
    there is off the timed stream. (A Stream object for the timed stream itself, as
    torch.cuda.current_stream() makes one on every call, does not count.) Used around the candidate's timed calls only (the reference and
    torch.compile are trusted). A second layer behind the static checks, which forbid streams in
    candidate source; CUDA code making streams is refused at build by the CUDA static checks."""

    def __init__(self, torch):
        self.torch = torch
        self.count = 0

    def __enter__(self):
        cuda = self.torch.cuda
        self.saved = (cuda.Stream, cuda.stream, cuda.set_stream)
        self.home = cuda.current_stream()
        watch = self
        original_stream_cls, original_stream_ctx, original_set_stream = self.saved

        class WatchedStream(original_stream_cls):
            # torch.cuda.current_stream() builds its result through this same name (a Stream for the
            # current stream's id): only a stream other than the timed one counts.
            def __new__(cls, *args, **kwargs):
                made = original_stream_cls.__new__(original_stream_cls, *args, **kwargs)
                if made != watch.home:
                    watch.count += 1
                return made

        def stream(s):
            if s is not None and s != watch.home:
                watch.count += 1
            return original_stream_ctx(s)

        def set_stream(s):
            if s != watch.home:
                watch.count += 1
            return original_set_stream(s)

        cuda.Stream, cuda.stream, cuda.set_stream = WatchedStream, stream, set_stream
        return self

    def __exit__(self, *exc):
        cuda = self.torch.cuda
        cuda.Stream, cuda.stream, cuda.set_stream = self.saved
        return False


def profile(ref_mod, cand_mod, protocol, device, trials=30, warmup=3, with_compile=True):
    """Times candidate, eager and torch.compile interleaved, L2 flushed before each trial. The
    candidate and eager are timed twice per trial (`*_repeat`): the medians of the same model differ
    only by noise, the band inside which a speed-up means nothing. Then the candidate's host wall
    time to a full synchronize, which catches work that escaped the timed stream."""
    import torch
    ref, cand = build_models(ref_mod, cand_mod, protocol, device)
    inputs = seeded_inputs(ref_mod, 7, device)
    variants = {"candidate": cand, "eager": ref}
    compile_s = None
    if with_compile:
        t0 = time.time()
        compiled = torch.compile(ref)
        with torch.no_grad():
            compiled(*inputs)
        torch.cuda.synchronize(device)
        compile_s = time.time() - t0
        variants["compile"] = compiled

        def compiled_tf32(*args):
            # The precision-matched column: the same compiled model with TF32 matmuls, as kforge's
            # tf32_contractions skill uses them (convolutions are TF32 in torch by default already).
            previous = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision("high")
            try:
                return compiled(*args)
            finally:
                torch.set_float32_matmul_precision(previous)

        variants["compile_tf32"] = compiled_tf32
    variants["candidate_repeat"] = cand
    variants["eager_repeat"] = ref
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device=device)
    times = {k: [] for k in variants}
    watch = StreamWatch(torch)
    with torch.no_grad():
        for _ in range(warmup):
            for m in variants.values():
                m(*inputs)
        torch.cuda.synchronize(device)
        for _ in range(trials):
            for name, m in variants.items():
                flush.zero_()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                if m is cand:
                    with watch:
                        m(*inputs)
                else:
                    m(*inputs)
                end.record()
                end.synchronize()
                times[name].append(start.elapsed_time(end) / 1e3)
        # Host wall time of the candidate to a full device synchronize: work it left on other
        # streams (or threads) is in here, and not in its event time on the timed stream.
        walls = []
        for _ in range(max(3, trials // 3)):
            flush.zero_()
            torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            with watch:
                cand(*inputs)
            torch.cuda.synchronize(device)
            walls.append(time.perf_counter() - t0)
    res = {}
    for name, ts in times.items():
        res["t_" + name] = statistics.median(ts)
        res["spread_" + name] = [min(ts), max(ts)]
    res["t_candidate_wall"] = statistics.median(walls)
    res["other_streams"] = watch.count
    res["samples"] = trials
    res["compile_seconds"] = compile_s
    return res


def precompile(ref_mod, protocol, device):
    """Compiles the reference with torch.compile and runs it once, so that the inductor's on-disk
    cache is warm when a later profile (maybe in another worker) compiles the same graph."""
    import torch
    ref, _ = build_models(ref_mod, None, protocol, device)
    inputs = seeded_inputs(ref_mod, 7, device)
    t0 = time.time()
    with torch.no_grad():
        torch.compile(ref)(*inputs)
    torch.cuda.synchronize(device)
    torch._dynamo.reset()
    return time.time() - t0


def evaluate(problem, candidate, protocol, device="cuda:0", do_profile=False, trials=30, do_verify=True,
             do_precompile=False, do_static_check=True):
    import torch
    result = {"protocol": protocol, "device": torch.cuda.get_device_name(device), "predicted": False,
              "torch": torch.__version__, "problem": problem}
    # Static checks first: loading the candidate runs its module-level code.
    from kforge.static_check import check_candidate
    try:
        with open(candidate) as f:
            cand_source = f.read()
        with open(problem) as f:
            ref_source = f.read()
    except OSError as e:
        result.update({"outcome": "runtime_fault", "message": "reading: %s" % e})
        return result
    findings = check_candidate(cand_source, ref_source, os.path.basename(candidate)) if do_static_check else []
    if findings:
        result.update({"outcome": "forbidden", "findings": findings,
                       "message": "; ".join("line %d: %s" % (f["line"], f["message"]) for f in findings[:5])})
        return result
    try:
        ref_mod = load_module(problem, "kforge_ref_%d" % os.getpid())
        cand_mod = load_module(candidate, "kforge_cand_%d" % os.getpid())
    except Exception as e:  # a candidate that does not even load is a failure of the candidate
        result.update({"outcome": "runtime_fault", "message": "loading: %s: %s" % (type(e).__name__, e)})
        return result
    try:
        return run_candidate(result, ref_mod, cand_mod, protocol, device, do_verify, do_precompile, do_profile, trials)
    finally:
        # Scratch a kforge candidate grew (cuDNN plans that want more than the program's workspace)
        # is freed, so this worker does not hold gigabytes the next candidate needs.
        release = getattr(cand_mod, "kforge_release", None)
        if callable(release):
            try:
                release()
            except Exception:  # a candidate whose release fails must not hide its own result
                pass


def run_candidate(result, ref_mod, cand_mod, protocol, device, do_verify, do_precompile, do_profile, trials):
    """Verification, then (when it passed) the precompile and the timing; fills and returns result."""
    import torch
    try:
        if do_verify:
            result.update(verify(ref_mod, cand_mod, protocol, device))
        else:
            result.update({"outcome": "ok", "message": "", "verified": False})
    except torch.cuda.OutOfMemoryError as e:
        result.update({"outcome": "resource_exhausted", "message": str(e)[:500]})
        return result
    except Exception as e:
        result.update({"outcome": "runtime_fault", "message": "%s: %s" % (type(e).__name__, str(e)[:1000])})
        return result
    if result["outcome"] == "ok" and do_precompile:
        try:
            result["precompile_seconds"] = precompile(ref_mod, protocol, device)
        except Exception as e:
            result["precompile_error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    if result["outcome"] == "ok" and do_profile:
        try:
            result.update(profile(ref_mod, cand_mod, protocol, device, trials=trials))
        except Exception as e:
            result["profile_error"] = "%s: %s" % (type(e).__name__, str(e)[:500])
    return result


FATAL_MARKERS = ("illegal memory access", "unspecified launch failure", "misaligned address",
                 "an illegal instruction", "device-side assert", "CUDA error: unknown error")


def serve():
    """JSON lines over stdin/stdout: one request {"problem", "candidate", "protocol", "profile",
    "trials"} per line, one result per line. Exits after a fault that poisons the CUDA context, so
    the caller starts a fresh worker for the next candidate."""
    import gc
    # Answers go out on a private copy of stdout; fd 1 and sys.stdout then point at stderr, so that
    # whatever a candidate prints (Python or C) can never pass for an answer.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import torch
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = None
        try:
            req = json.loads(line)
            res = evaluate(req["problem"], req["candidate"], req.get("protocol", "cuda-agent"),
                           do_profile=bool(req.get("profile")), trials=int(req.get("trials", 30)),
                           do_verify=bool(req.get("verify", True)), do_precompile=bool(req.get("precompile")),
                           do_static_check=bool(req.get("static_check", True)))
        except Exception as e:
            res = {"outcome": "runtime_fault", "message": "harness: %s: %s" % (type(e).__name__, e)}
        res["id"] = req.get("id") if isinstance(req, dict) else None
        # Give cached blocks back, so that workers sharing the GPU do not hoard its memory.
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        answers.write(json.dumps(res) + "\n")
        answers.flush()
        if res.get("outcome") == "runtime_fault" and any(m in res.get("message", "") for m in FATAL_MARKERS):
            return 3
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m kforge.harness", description=__doc__.split("\n\n")[0])
    ap.add_argument("--serve", action="store_true", help="answer JSON-line requests on stdin")
    ap.add_argument("--problem")
    ap.add_argument("--candidate")
    ap.add_argument("--protocol", default="cuda-agent", choices=sorted(PROTOCOLS))
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--trials", type=int, default=30)
    args = ap.parse_args(argv)
    if args.serve:
        return serve()
    if not args.problem or not args.candidate:
        ap.error("--problem and --candidate are required (or --serve)")
    res = evaluate(args.problem, args.candidate, args.protocol, do_profile=args.profile, trials=args.trials)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
