"""GPU harness worker: verifies a candidate ModelNew against the problem's Model and times
candidate, eager and torch.compile side by side. One worker per GPU, in two processes: this one
(the checker) runs the reference and decides the verdict; the candidate runs in a process of its
own (`kforge.candidate_worker`), which sends its outputs back and never holds a reference output.
A CUDA fault poisons only the candidate's process, which the checker starts again.

    python3 -m kforge.harness --problem P.py --candidate model_new.py [--protocol cuda-agent] [--profile]

prints one JSON result (the result type of DESIGN.md) on the last line of stdout.
"""
import argparse
import atexit
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

from kforge.protocol import BASELINES, DEFAULT_BASELINES, NAMED, TIMING_METHODS, Timing, protocol_from, timing_from


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


def made_on_device(make, device):
    """make() with factory functions allocating on `device`; a problem whose code draws from a CPU
    generator (torch.randn(..., generator=torch.Generator())) cannot run under that default device, so
    it runs with torch's defaults instead (the caller moves the results). make() seeds itself: both
    tries draw the same numbers their generators would."""
    try:
        with on_device(device):
            return make()
    except RuntimeError as e:
        if "generator" not in str(e):
            raise
    return make()


def seeded_inputs(mod, seed, device):
    import torch

    def make():
        torch.manual_seed(seed)
        torch.cuda.manual_seed(seed)
        return mod.get_inputs()
    out = []
    made = made_on_device(make, device)
    for t in made:
        out.append(t.to(device) if isinstance(t, torch.Tensor) else t)  # dtypes kept (int targets, bool masks)
    return out


def build_models(ref_mod, cand_mod, protocol, device):
    import torch
    mode = protocol.mode
    init = ref_mod.get_init_inputs()

    def make():
        torch.manual_seed(42)
        ref = ref_mod.Model(*init)
        torch.manual_seed(42)
        return ref, cand_mod.ModelNew(*init) if cand_mod is not None else None
    ref, cand = made_on_device(make, device)
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


def synchronize(device):
    import torch
    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


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




FATAL_MARKERS = ("illegal memory access", "unspecified launch failure", "misaligned address",
                 "an illegal instruction", "device-side assert", "CUDA error: unknown error")


def failure_of(e):
    """An exception while a candidate ran, as a result: out of memory is resource_exhausted whether
    torch's allocator raised it or a CUDA call (cuDNN scratch, a candidate's own cudaMalloc) did."""
    import torch
    if isinstance(e, torch.cuda.OutOfMemoryError) or "CUDA error: out of memory" in str(e):
        return {"outcome": "resource_exhausted", "message": str(e)[:500]}
    return {"outcome": "runtime_fault", "message": "%s: %s" % (type(e).__name__, str(e)[:1000])}


def _not_dumpable():
    """The checker's memory is closed to ptrace and /proc/PID/mem of same-user processes, the
    candidate's among them (PR_SET_DUMPABLE 0)."""
    try:
        import ctypes
        return ctypes.CDLL(None).prctl(4, 0) == 0
    except Exception:
        return False


def exchange_base(room=32 << 30):
    """/dev/shm when it has room for large outputs (a container's may have 64 MB), else TMPDIR."""
    shm = "/dev/shm"
    try:
        st = os.statvfs(shm)
        if os.access(shm, os.W_OK) and st.f_bavail * st.f_frsize >= room:
            return shm
    except OSError:
        pass
    return None


def private_compile_cache(baseline_cache, parent=None):
    """A fresh folder for one candidate process's torch.compile caches (Inductor, Triton): a copy of
    the run's baseline cache (precompiled by a baselines worker, read-only here) when there is one.
    What the candidate's process writes there is gone when it ends: never another worker's, another
    run's, or the baseline cache itself."""
    private = tempfile.mkdtemp(prefix="kforge-compile-cache-", dir=parent)
    if baseline_cache and os.path.isdir(baseline_cache):
        try:
            shutil.copytree(baseline_cache, private, symlinks=True, dirs_exist_ok=True)
        except (OSError, shutil.Error) as e:  # a cold cache is slower, not wrong
            print("kforge harness: copying the baseline cache failed (%s); compiling afresh" % e, file=sys.stderr)
    return private


def candidate_env(environ, compile_cache):
    """The candidate's process's environment: its torch.compile caches in its private folder."""
    env = dict(environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(compile_cache, "inductor")
    env["TRITON_CACHE_DIR"] = os.path.join(compile_cache, "triton")
    env.pop("KFORGE_HARNESS_ROLE", None)
    return env


def precompile_reference(problem, protocol, device):
    """A baselines worker's one job (KFORGE_HARNESS_ROLE=baselines): the reference compiled with
    torch.compile here, in the checker, into the baseline cache; no candidate is loaded."""
    if os.environ.get("KFORGE_HARNESS_ROLE") != "baselines":
        return {"outcome": "runtime_fault", "message": "harness: precompile_reference on a worker that is not a "
                "baselines worker (its baseline cache is read-only)"}
    from kforge.candidate_worker import precompile
    ref_mod = load_module(problem, "kforge_ref_%d" % os.getpid())
    return {"outcome": "ok", "precompile_seconds": precompile(ref_mod, protocol, device)}


class CandidateProcess:
    """The candidate's own process (python3 -m kforge.candidate_worker), started on first use and
    again after it died. It sends outputs back as raw files in a private exchange directory (in
    /dev/shm when it has room); nothing goes the other way but commands and seeds."""

    def __init__(self):
        self.proc = None
        self.exchange = None
        self.compile_cache = None
        atexit.register(self.stop)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        self.stop()
        self.exchange = tempfile.mkdtemp(prefix="kforge-exchange-", dir=exchange_base())
        self.compile_cache = private_compile_cache(os.environ.get("KFORGE_BASELINE_CACHE"))
        env = candidate_env(os.environ, self.compile_cache)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-m", "kforge.candidate_worker", "--exchange", self.exchange,
                                      "--parent", str(os.getpid())],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env)

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self.exchange:
            shutil.rmtree(self.exchange, ignore_errors=True)
            self.exchange = None
        if self.compile_cache:
            shutil.rmtree(self.compile_cache, ignore_errors=True)
            self.compile_cache = None

    def send(self, req):
        if not self.alive():
            self.start()
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # receive() reports the death

    def receive(self):
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.stop()
            how = "was killed by signal %d" % -code if code < 0 else "exited with code %d" % code
            return {"outcome": "runtime_fault", "message": "the candidate's process %s without an answer" % how}
        try:
            ans = json.loads(line)
            if not isinstance(ans, dict):
                raise ValueError("not an object")
        except ValueError as e:
            self.stop()
            return {"outcome": "runtime_fault", "message": "the candidate's process answered garbage: %s" % e}
        if ans.get("outcome") == "runtime_fault" and any(m in ans.get("message", "") for m in FATAL_MARKERS):
            self.stop()  # its CUDA context is poisoned: the next command starts a fresh one
        return ans

    def ask(self, req):
        self.send(req)
        return self.receive()

    def fetch_outputs(self, meta, device):
        """The outputs a `run` sent, as tensors on `device`: mapped from the candidate's process by
        CUDA IPC, or read from the exchange files; (tensors, None) or (None, why)."""
        import torch
        listed = meta.get("outputs")
        if not isinstance(listed, list):
            return None, "the candidate's process sent no output list"
        described = []
        for i, m in enumerate(listed):
            dtype = getattr(torch, str(m.get("dtype")), None) if isinstance(m, dict) else None
            shape = m.get("shape") if isinstance(m, dict) else None
            if not isinstance(dtype, torch.dtype) or not isinstance(shape, list) or \
                    not all(isinstance(d, int) and d >= 0 for d in shape):
                return None, "output %d: the candidate's process described it as %r" % (i, m)
            described.append((m, dtype, shape))
        if meta.get("transfer") == "ipc":
            try:
                return [open_shared(m, dtype, shape, device) for m, dtype, shape in described], None
            except Exception as e:  # not mappable here: the same outputs through files
                print("kforge harness: mapping the candidate's outputs failed (%s: %s); reading files"
                      % (type(e).__name__, e), file=sys.stderr)
                meta = self.ask({"cmd": "write_files"})
                if "outcome" in meta:
                    return None, meta.get("message", "")
        return self.read_files(described, device)

    def read_files(self, described, device):
        import torch
        outs = []
        for i, (m, dtype, shape) in enumerate(described):
            numel = 1
            for d in shape:
                numel *= d
            path = os.path.join(self.exchange, "out_%d.bin" % i)
            nbytes = numel * torch.empty((), dtype=dtype).element_size()
            try:
                size = os.path.getsize(path)
            except OSError:
                size = -1
            if size != nbytes:
                return None, "output %d: %d bytes sent for shape %s %s (%d expected)" % (i, size, shape, dtype, nbytes)
            if numel == 0:
                outs.append(torch.empty(shape, dtype=dtype, device=device))
            else:
                host = torch.from_file(path, shared=False, size=numel, dtype=dtype)
                outs.append(host.to(device).reshape(shape))
                del host
            os.unlink(path)
        return outs, None


def open_shared(m, dtype, shape, device):
    """A tensor of the candidate's process mapped into this one (CUDA IPC), as torch's own
    rebuild_cuda_tensor does it, from fields checked here (never unpickled)."""
    import base64
    import re
    import torch
    stride, offset, ipc = m.get("stride"), m.get("storage_offset"), m.get("ipc")
    if not isinstance(stride, list) or len(stride) != len(shape) or \
            not all(isinstance(v, int) and v >= 0 for v in stride + [offset]):
        raise ValueError("bad layout %r" % m)
    if ipc is None:  # an empty storage
        return torch.empty(shape, dtype=dtype, device=device)
    dec = (lambda v: base64.b64decode(v) if isinstance(v, str) else None)
    counter = dec(ipc.get("ref_counter"))
    if counter is None or not re.fullmatch(rb"/torch_[0-9_]+", counter):
        raise ValueError("bad reference counter name %r" % counter)
    ints = [ipc.get(k) for k in ("device", "size_bytes", "offset_bytes", "ref_counter_offset")]
    if not all(isinstance(v, int) and v >= 0 for v in ints):
        raise ValueError("bad IPC fields %r" % ipc)
    storage = torch.UntypedStorage._new_shared_cuda(ipc["device"], dec(ipc["handle"]), ipc["size_bytes"],
                                                    ipc["offset_bytes"], counter, ipc["ref_counter_offset"],
                                                    dec(ipc.get("event")), bool(ipc.get("event_sync")))
    itemsize = torch.empty((), dtype=dtype).element_size()
    if all(d > 0 for d in shape):
        last = offset + sum((d - 1) * st for d, st in zip(shape, stride))
        if (last + 1) * itemsize > storage.nbytes():
            raise ValueError("a view of %d bytes past a storage of %d" % ((last + 1) * itemsize, storage.nbytes()))
    t = torch.empty((0,), dtype=dtype, device=device)
    t.set_(storage, offset, shape, stride)
    return t


COMPARE_CHUNK = 1 << 24  # elements compared at once: 16 Mi doubles is 128 MiB per temporary


def _chunks(a, b, chunk):
    """Pairs of flat slices of a and b (same shape), `chunk` elements at a time: a comparison's float64
    temporaries stay small however large the outputs are (a level-1 output of 6 GB in float32 would
    need five 12 GB temporaries at once, which an 80 GB GPU shared with the candidate does not have)."""
    fa, fb = a.reshape(-1), b.reshape(-1)
    for start in range(0, fa.numel(), chunk):
        yield fa[start:start + chunk], fb[start:start + chunk]


def compare_one(a, b, atol, rtol, chunk=None):
    """One output against the reference's, chunk by chunk in float64; returns (ok, max_abs_err,
    max_rel_err, why) with why one of None, "nonfinite", "differs". The verdict and the errors are
    those of the whole tensors at once: allclose and the maxima are elementwise."""
    import torch
    chunk = chunk or COMPARE_CHUNK
    max_abs = 0.0
    max_rel = 0.0
    ok = True
    for ca, cb in _chunks(a, b, chunk):
        af = ca.double()
        bf = cb.double()
        fin_b = torch.isfinite(bf)
        if not bool(fin_b.all()) and not torch.equal(fin_b, torch.isfinite(af)):
            return False, None, None, "nonfinite"
        diff = (bf - af).abs()
        diff = torch.where(torch.isfinite(diff), diff, torch.zeros_like(diff))
        max_abs = max(max_abs, float(diff.max()))
        max_rel = max(max_rel, float((diff / af.abs().clamp_min(1e-12)).max()))
        if ok and not torch.allclose(bf, af, atol=atol, rtol=rtol, equal_nan=False):
            ok = False  # keep going: the errors reported are the whole output's
    return ok, max_abs, max_rel, None if ok else "differs"


def compare(ref_out, cand_out, atol, rtol, chunk=None):
    """Returns (ok, max_abs_err, max_rel_err, message)."""
    r = flatten(ref_out)
    c = flatten(cand_out)
    if len(r) != len(c):
        return False, None, None, "candidate returned %d outputs, reference %d" % (len(c), len(r))
    max_abs = 0.0
    max_rel = 0.0
    for i, (a, b) in enumerate(zip(r, c)):
        if tuple(a.shape) != tuple(b.shape):
            return False, None, None, "output %d has shape %s, expected %s" % (i, tuple(b.shape), tuple(a.shape))
        if a.dtype != b.dtype:
            return False, None, None, "output %d has dtype %s, expected %s" % (i, b.dtype, a.dtype)
        ok, a_err, r_err, why = compare_one(a, b, atol, rtol, chunk)
        if why == "nonfinite":
            return False, None, None, "output %d has NaN or Inf where the reference has none" % i
        max_abs = max(max_abs, a_err)
        max_rel = max(max_rel, r_err)
        if not ok:
            return False, max_abs, max_rel, "output %d differs: max abs err %.3g, max rel err %.3g" % (i, max_abs, max_rel)
    return True, max_abs, max_rel, ""


def _close_everywhere(x, y, atol, rtol, chunk=None):
    """torch.allclose(x, y) without a temporary the size of either (x, y: one shape and dtype)."""
    import torch
    return all(torch.allclose(cx, cy, atol=atol, rtol=rtol) for cx, cy in _chunks(x, y, chunk or COMPARE_CHUNK))


def _max_abs(x, chunk=None):
    return max(float(cx.abs().max()) for cx, _ in _chunks(x, x, chunk or COMPARE_CHUNK))


def loose_tolerance_warnings(ref_out, inputs, atol, rtol, chunk=None):
    """Outputs whose scale the tolerance does not resolve: all zeros, or an input of the same shape
    passed through, would also pass allclose (a candidate could be wrong and verified)."""
    import torch
    warnings = []
    for i, a in enumerate(ref_out):
        if a.numel() == 0 or not a.dtype.is_floating_point:
            continue
        zero = torch.zeros((), dtype=a.dtype, device=a.device)
        if all(torch.allclose(zero.expand_as(ca), ca, atol=atol, rtol=rtol) for ca, _ in _chunks(a, a, chunk or COMPARE_CHUNK)):
            warnings.append("output %d would also pass as all zeros (max |ref| %.3g <= atol %g): the tolerance "
                            "does not resolve its scale" % (i, _max_abs(a, chunk), atol))
            continue
        for k, x in enumerate(inputs):
            if isinstance(x, torch.Tensor) and x.shape == a.shape and x.dtype == a.dtype and \
                    _close_everywhere(x, a, atol, rtol, chunk):
                warnings.append("output %d would also pass as input %d unchanged" % (i, k))
                break
    return warnings


def verify(ref_mod, child, protocol, device, seeds=None):
    """The reference runs here while the candidate runs in its own process on the same seed's
    inputs; its outputs come back through the exchange directory and are compared here."""
    import torch
    atol, rtol = protocol.atol, protocol.rtol
    seeds = seeds or [1000 + 7 * k for k in range(protocol.input_sets)]
    warnings = None
    ref, _ = build_models(ref_mod, None, protocol, device)
    worst_abs = 0.0
    worst_rel = 0.0
    with torch.no_grad():
        for seed in seeds:
            child.send({"cmd": "run", "seed": seed})
            inputs = seeded_inputs(ref_mod, seed, device)
            ref_out = flatten(ref(*inputs))
            if warnings is None:  # on the first input set
                warnings = loose_tolerance_warnings(ref_out, inputs, atol, rtol)
            del inputs
            synchronize(device)
            if str(device).startswith("cuda"):
                torch.cuda.empty_cache()  # the inputs' blocks back to the GPU, for the candidate's process
            ans = child.receive()
            if "outcome" in ans:
                return {"outcome": ans["outcome"], "message": "seed %d: %s" % (seed, ans.get("message", ""))}
            if "wrong" in ans:
                return {"outcome": "wrong_answer", "max_abs_err": None, "max_rel_err": None,
                        "message": "seed %d: %s" % (seed, ans["wrong"])}
            cand_out, why = child.fetch_outputs(ans, device)
            if why:
                return {"outcome": "wrong_answer", "max_abs_err": None, "max_rel_err": None,
                        "message": "seed %d: %s" % (seed, why)}
            ok, a, r, msg = compare(ref_out, cand_out, atol, rtol)
            del cand_out, ref_out
            if a is not None:
                worst_abs = max(worst_abs, a)
                worst_rel = max(worst_rel, r)
            if not ok:
                return {"outcome": "wrong_answer", "max_abs_err": a, "max_rel_err": r, "message": "seed %d: %s" % (seed, msg)}
    res = {"outcome": "ok", "max_abs_err": worst_abs, "max_rel_err": worst_rel, "message": ""}
    if warnings:
        res["warnings"] = warnings
    return res


def device_name(device):
    import torch
    return torch.cuda.get_device_name(device) if str(device).startswith("cuda") else str(device)


def evaluate(problem, candidate, protocol, device="cuda:0", do_profile=False, trials=30, do_verify=True,
             do_static_check=True, child=None, timing=None):
    """protocol: a protocol.Protocol (or a name of protocol.NAMED); timing: a protocol.Timing."""
    import torch
    protocol = protocol_from(protocol) if not hasattr(protocol, "atol") else protocol
    timing = timing or Timing()
    result = {"protocol": protocol.name, "device": device_name(device), "predicted": False,
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
    except Exception as e:
        result.update({"outcome": "runtime_fault", "message": "loading the problem: %s: %s" % (type(e).__name__, e)})
        return result
    own = child is None
    child = child or CandidateProcess()
    try:
        loaded = child.ask({"cmd": "load", "problem": os.path.abspath(problem), "candidate": os.path.abspath(candidate),
                            "protocol": vars(protocol), "device": device})
        if "outcome" in loaded:
            result.update({"outcome": loaded["outcome"], "message": loaded.get("message", "")})
            return result
        return run_candidate(result, ref_mod, child, protocol, device, do_verify, do_profile, trials, timing)
    finally:
        if own:
            child.stop()
        elif child.alive():
            child.ask({"cmd": "release"})


def run_candidate(result, ref_mod, child, protocol, device, do_verify, do_profile, trials, timing):
    """Verification, then (when it passed) the timing; fills and returns result."""
    try:
        if do_verify:
            result.update(verify(ref_mod, child, protocol, device))
        else:
            result.update({"outcome": "ok", "message": "", "verified": False})
    except Exception as e:  # on the reference's side (the candidate's failures come as answers)
        result.update(failure_of(e))
        return result
    if result["outcome"] == "ok" and do_profile:
        ans = child.ask({"cmd": "profile", "trials": trials, "timing": {
            "method": timing.method, "fresh_inputs": timing.fresh_inputs, "baselines": list(timing.baselines)}})
        if "outcome" in ans:
            result["profile_error"] = ans.get("message", "")[:500]
        else:
            result.update({k: v for k, v in ans.items() if k.startswith(("t_", "spread_")) or
                           k in ("other_streams", "samples", "compile_seconds", "timing", "fresh_inputs", "cuda_graph")})
    return result


def serve():
    """JSON lines over stdin/stdout: one request {"problem", "candidate", "protocol" (the object kforge
    sends, or a name), "timing" ({"method", "fresh_inputs", "baselines"}), "profile", "trials", ...} per
    line, one result per line. The candidate's process is started with the first
    request and again after it died; this process never runs candidate code."""
    import gc
    # Answers go out on a private copy of stdout; fd 1 and sys.stdout then point at stderr, so that
    # whatever a candidate prints (Python or C) can never pass for an answer.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _not_dumpable()
    child = CandidateProcess()
    import torch
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = None
        try:
            req = json.loads(line)
            if isinstance(req, dict) and req.get("cmd") == "precompile_reference":
                res = precompile_reference(req["problem"], protocol_from(req.get("protocol", "cuda-agent")),
                                           req.get("device", "cuda:0"))
                answers.write(json.dumps(res) + "\n")
                answers.flush()
                continue
            res = evaluate(req["problem"], req["candidate"], protocol_from(req.get("protocol", "cuda-agent")),
                           device=req.get("device", "cuda:0"),
                           do_profile=bool(req.get("profile")), trials=int(req.get("trials", 30)),
                           do_verify=bool(req.get("verify", True)),
                           do_static_check=bool(req.get("static_check", True)), child=child,
                           timing=timing_from(req.get("timing"), bool(req.get("compile", True)),
                                              bool(req.get("eager", True))))
        except Exception as e:
            res = {"outcome": "runtime_fault", "message": "harness: %s: %s" % (type(e).__name__, e)}
        res["id"] = req.get("id") if isinstance(req, dict) else None
        # Give cached blocks back, so that workers sharing the GPU do not hoard its memory.
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        answers.write(json.dumps(res) + "\n")
        answers.flush()
    child.stop()
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m kforge.harness", description=__doc__.split("\n\n")[0])
    ap.add_argument("--serve", action="store_true", help="answer JSON-line requests on stdin")
    ap.add_argument("--problem")
    ap.add_argument("--candidate")
    ap.add_argument("--protocol", default="cuda-agent", choices=sorted(NAMED))
    ap.add_argument("--device", default="cuda:0", help="cuda:N, or cpu for a candidate in plain PyTorch")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--timing", default="events", choices=TIMING_METHODS)
    ap.add_argument("--fresh-inputs", action="store_true", help="a different input set on every timed call")
    ap.add_argument("--baselines", default=",".join(DEFAULT_BASELINES),
                    help="comma-separated, of: " + ", ".join(BASELINES))
    args = ap.parse_args(argv)
    if args.serve:
        return serve()
    if not args.problem or not args.candidate:
        ap.error("--problem and --candidate are required (or --serve)")
    _not_dumpable()
    try:
        timing = timing_from({"method": args.timing, "fresh_inputs": args.fresh_inputs,
                              "baselines": [b for b in args.baselines.split(",") if b]})
    except ValueError as e:
        ap.error(str(e))
    res = evaluate(args.problem, args.candidate, args.protocol, device=args.device, do_profile=args.profile,
                   trials=args.trials, timing=timing)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
