"""Timing a candidate beside its baselines, in the candidate's process (`kforge.candidate_worker`), by one
of the methods of src/sandbox/timing_methods.def, the same method for every variant:

- events: CUDA events around each call, L2 flushed before it, variants interleaved trial by trial;
- do_bench: triton.testing.do_bench per variant (its own warm-up, L2 clearing and repetitions);
- wall: host wall clock around a call and a full device synchronize, L2 flushed, variants interleaved.

The candidate and eager are timed twice (`*_repeat`): the medians of one model differ only by noise,
the band inside which a speed-up means nothing. With fresh inputs every timed call gets another input
set from a pool made before timing (outputs cached across calls, keyed on the inputs, gain nothing).
Compile time is measured apart (compile_seconds) and never enters a timing.
"""
import json
import statistics
import time

from kforge.harness import build_models, seeded_inputs

_COMPILE_MODES = {"compile": None, "compile_max_autotune": "max-autotune",
                  "compile_reduce_overhead": "reduce-overhead"}
_POOL_BYTES = 2 << 30  # inputs held at once for fresh-input timing


def _input_pool(ref_mod, device, fresh, trials):
    import torch
    first = seeded_inputs(ref_mod, 7, device)
    if not fresh:
        return [first]
    size = sum(t.numel() * t.element_size() for t in first if isinstance(t, torch.Tensor))
    n = max(2, min(8, trials, _POOL_BYTES // max(size, 1)))
    return [first] + [seeded_inputs(ref_mod, 7 + k, device) for k in range(1, n)]


def _baselines(torch, ref, inputs, names, device):
    """name -> callable for every baseline named, and name -> seconds its compile took."""
    variants, compile_s = {}, {}
    for name in names:
        if name == "eager":
            variants[name] = ref
        elif name in _COMPILE_MODES:
            t0 = time.time()
            mode = _COMPILE_MODES[name]
            compiled = torch.compile(ref, mode=mode) if mode else torch.compile(ref)
            with torch.no_grad():
                for _ in range(3 if mode == "reduce-overhead" else 1):  # CUDA graphs record on a later call
                    compiled(*inputs)
            torch.cuda.synchronize(device)
            compile_s[name] = time.time() - t0
            variants[name] = compiled
    if "compile_tf32" in names:
        # The precision-matched column: torch.compile with TF32 matmuls, as kforge's tf32_contractions
        # skill uses them (convolutions are TF32 in torch by default already).
        base = variants.get("compile")
        t0 = time.time()
        if base is None:
            base = torch.compile(ref)

        def compiled_tf32(*args):
            previous = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision("high")
            try:
                return base(*args)
            finally:
                torch.set_float32_matmul_precision(previous)

        with torch.no_grad():
            compiled_tf32(*inputs)
        torch.cuda.synchronize(device)
        compile_s["compile_tf32"] = time.time() - t0
        variants["compile_tf32"] = compiled_tf32
    return variants, compile_s


def _do_bench(fn):
    """Median, 20th and 80th percentile in seconds of triton.testing.do_bench (ms)."""
    try:
        from triton.testing import do_bench
    except ImportError:
        raise RuntimeError("--timing do_bench needs triton, which this python lacks; use --timing events")
    qs = do_bench(fn, warmup=25, rep=100, quantiles=[0.5, 0.2, 0.8])
    return [q / 1e3 for q in qs]


def profile(ref_mod, cand_mod, protocol, device, timing, watch, trials=30, warmup=3):
    """Times the candidate and timing.baselines by timing.method; returns the result's timing fields."""
    import torch
    ref, cand = build_models(ref_mod, cand_mod, protocol, device)
    pool = _input_pool(ref_mod, device, timing.fresh_inputs, trials)
    baselines, compile_s = _baselines(torch, ref, pool[0], timing.baselines, device)
    variants = dict({"candidate": cand}, **baselines)
    variants["candidate_repeat"] = cand
    if "eager" in variants:
        variants["eager_repeat"] = ref
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device=device)
    times = {k: [] for k in variants}
    res = {}
    with torch.no_grad():
        for _ in range(warmup):
            for m in variants.values():
                m(*pool[0])
        torch.cuda.synchronize(device)
        if timing.method == "do_bench":
            for name, m in variants.items():
                calls = iter(range(1 << 62))

                def fn(m=m, calls=calls):
                    return m(*pool[next(calls) % len(pool)])

                if m is cand:
                    with watch:
                        med, lo, hi = _do_bench(fn)
                else:
                    med, lo, hi = _do_bench(fn)
                res["t_" + name], res["spread_" + name] = med, [lo, hi]
        else:
            for trial in range(trials):
                inputs = pool[trial % len(pool)]
                for name, m in variants.items():
                    flush.zero_()
                    times[name].append(_timed_call(torch, m, inputs, timing.method, device, watch if m is cand else None))
            for name, ts in times.items():
                res["t_" + name] = statistics.median(ts)
                res["spread_" + name] = [min(ts), max(ts)]
        # Host wall time of the candidate to a full device synchronize: work it left on other
        # streams (or threads) is in here, and not in its event time on the timed stream.
        walls = []
        for k in range(max(3, trials // 3)):
            flush.zero_()
            walls.append(_timed_call(torch, cand, pool[k % len(pool)], "wall", device, watch))
    res["t_candidate_wall"] = statistics.median(walls)
    res["other_streams"] = watch.count
    res["samples"] = trials if timing.method != "do_bench" else 0
    res["compile_seconds"] = compile_s
    res["timing"] = timing.method
    res["fresh_inputs"] = timing.fresh_inputs
    stats = cuda_graph_stats(cand_mod)
    if stats is not None:
        res["cuda_graph"] = stats
    return res


def cuda_graph_stats(cand_mod):
    """How a kforge program library ran its calls (eager, captured, replayed as one CUDA graph), from its
    kforge_cuda_graph_stats(); None for a candidate that is not one (an export, hand-written code)."""
    load = getattr(cand_mod, "_kf_load", None)
    if not callable(load):
        return None
    import ctypes
    lib = load()
    fn = getattr(lib, "kforge_cuda_graph_stats", None)
    if fn is None:
        return None
    fn.restype = ctypes.c_char_p
    try:
        return json.loads(fn().decode(errors="replace"))
    except ValueError:
        return None


def _timed_call(torch, m, inputs, method, device, watch):
    """Seconds of one call of m by `method` ("events" or "wall"); the watch, when given, covers the
    whole call (the candidate's), and its own host time is not charged to it."""
    if method == "wall":
        torch.cuda.synchronize(device)
        if watch is not None:
            with watch:
                t0 = time.perf_counter()
                m(*inputs)
                torch.cuda.synchronize(device)
                return time.perf_counter() - t0
        t0 = time.perf_counter()
        m(*inputs)
        torch.cuda.synchronize(device)
        return time.perf_counter() - t0
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    if watch is not None:
        with watch:
            start.record()
            m(*inputs)
            end.record()
    else:
        start.record()
        m(*inputs)
        end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3
