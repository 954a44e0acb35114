"""The candidate's process: loads and runs a candidate ModelNew for the harness
(`kforge.harness`), which starts it, verifies what it sends back and never shows it a reference
output. The reference runs in the harness's process, under another CUDA context: nothing the
candidate does here (a scan of Python's objects or of the caching allocator, a read of freed
memory, a look up the call stack) can find a reference output, because none exists in this process.

    python3 -m kforge.candidate_worker --exchange DIR

JSON lines: one command per line on stdin, one answer per line on a private copy of stdout (fd 1
and sys.stdout point at stderr, so what a candidate prints never passes for an answer).

- {"cmd": "load", "problem", "candidate", "protocol", "device"}: loads both files and builds both
  models as the protocol says (the reference model is needed for the weights and for timing).
- {"cmd": "run", "seed"}: makes the seed's inputs, poisons the allocator, runs the candidate and
  answers {"outputs": [{"shape", "dtype", ...}, ...], "transfer"} or {"wrong": why} (an output that
  is not a tensor, or that aliases an input). On a GPU the outputs are shared by CUDA IPC ("ipc":
  their storage's handle; they stay alive here until the next command); otherwise, or when that
  fails, each is written raw to DIR/out_<i>.bin ("file"). {"cmd": "write_files"} writes the last
  run's outputs as files after all (the harness could not map them).
- {"cmd": "profile", "trials", "timing"}: the candidate timed beside the baselines by the method that
  "timing" names (kforge.timing). torch.compile's caches are this process's own (TORCHINDUCTOR_CACHE_DIR,
  TRITON_CACHE_DIR: a private copy of the run's baseline cache, which a baselines worker filled with
  `precompile` and which is read-only here).
- {"cmd": "release"}: drops the models and frees what the candidate holds.
A failure is an answer {"outcome": "runtime_fault" | "resource_exhausted", "message"}; after a
fault that poisons the CUDA context the process exits (code 3) and the harness starts another.
"""
import argparse
import gc
import itertools
import json
import os
import sys
import time

from kforge import timing
from kforge.protocol import protocol_from, timing_from
from kforge.harness import (FATAL_MARKERS, build_models, failure_of, flatten, load_module, seeded_inputs,
                            synchronize)


def poison_allocator(device, nbytes=1 << 30):
    """Fills a block of the caching allocator with NaN and frees it, so that outputs a candidate
    allocates with torch.empty and forgets to write read as NaN rather than stale results."""
    import torch
    free, _ = torch.cuda.mem_get_info(device)
    n = min(nbytes, max(free // 4, 1 << 20)) // 4
    block = torch.full((n,), float("nan"), dtype=torch.float32, device=device)
    del block


def torch_module():
    import torch
    return torch


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
        self.home = None
        cuda = torch.cuda
        self.saved = (cuda.Stream, cuda.stream, cuda.set_stream)
        watch = self
        original_stream_cls, original_stream_ctx, original_set_stream = self.saved

        # Made once: entering the watch only swaps three names (its cost falls inside no timing).
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

        self.patched = (WatchedStream, stream, set_stream)

    def __enter__(self):
        cuda = self.torch.cuda
        self.home = cuda.current_stream()
        cuda.Stream, cuda.stream, cuda.set_stream = self.patched
        return self

    def __exit__(self, *exc):
        cuda = self.torch.cuda
        cuda.Stream, cuda.stream, cuda.set_stream = self.saved
        return False


def precompile(ref_mod, protocol, device):
    """Compiles the reference with torch.compile and runs it once, so that the inductor's on-disk
    cache is warm when a later profile (in another worker) compiles the same graph. Run by a
    baselines worker's checker (harness.precompile_reference), never where a candidate was loaded."""
    import torch
    ref, _ = build_models(ref_mod, None, protocol, device)
    inputs = seeded_inputs(ref_mod, 7, device)
    t0 = time.time()
    with torch.no_grad():
        torch.compile(ref)(*inputs)
    torch.cuda.synchronize(device)
    torch._dynamo.reset()
    return time.time() - t0


def checked_outputs(out, inputs):
    """The candidate's outputs as a list of tensors, or {"wrong": why}."""
    import torch
    outs = flatten(out)
    for i, b in enumerate(outs):
        if not isinstance(b, torch.Tensor):
            return {"wrong": "output %d is %s, not a tensor" % (i, type(b).__name__)}
        for x in inputs:
            if isinstance(x, torch.Tensor) and b.numel() and x.numel() and b.data_ptr() == x.data_ptr():
                return {"wrong": "output %d aliases an input" % i}
    return outs


def write_outputs(outs, exchange):
    """The outputs, raw, into the exchange directory; the harness reads them back."""
    import torch
    meta = []
    for i, b in enumerate(outs):
        path = os.path.join(exchange, "out_%d.bin" % i)
        nbytes = b.numel() * b.element_size()
        with open(path, "wb") as f:
            try:
                if nbytes:
                    os.posix_fallocate(f.fileno(), 0, nbytes)  # no room is an error here, not a SIGBUS later
            except OSError as e:
                return {"outcome": "resource_exhausted",
                        "message": "no room for output %d (%d bytes) in %s: %s" % (i, nbytes, exchange, e)}
        if b.numel():
            torch.from_file(path, shared=True, size=b.numel(), dtype=b.dtype).copy_(b.detach().reshape(-1))
        meta.append({"shape": list(b.shape), "dtype": str(b.dtype).replace("torch.", "")})
    return {"outputs": meta, "transfer": "file"}


def share_outputs(outs):
    """CUDA outputs as IPC descriptors of their storage (no copy): the harness maps them into its own
    context and reads them there. The tensors stay alive here until the next command."""
    import base64
    meta = []
    for b in outs:
        m = {"shape": list(b.shape), "dtype": str(b.dtype).replace("torch.", ""), "stride": list(b.stride()),
             "storage_offset": b.storage_offset()}
        if b.untyped_storage().nbytes():
            dev, handle, size, offset, counter, counter_offset, event, sync = b.untyped_storage()._share_cuda_()
            enc = (lambda v: base64.b64encode(v).decode() if isinstance(v, bytes) else None)
            m["ipc"] = {"device": dev, "handle": enc(handle), "size_bytes": size, "offset_bytes": offset,
                        "ref_counter": enc(counter), "ref_counter_offset": counter_offset, "event": enc(event),
                        "event_sync": bool(sync)}
        meta.append(m)
    return {"outputs": meta, "transfer": "ipc"}


_LOADS = itertools.count(1)


class Candidate:
    """What one `load` made: the two modules and the two models."""

    def __init__(self, req):
        self.protocol = protocol_from(req["protocol"])
        self.device = req["device"]
        n = next(_LOADS)  # module names differ from one load to the next
        try:
            self.ref_mod = load_module(req["problem"], "kforge_ref_%d" % n)
            self.cand_mod = load_module(req["candidate"], "kforge_cand_%d" % n)
        except Exception as e:  # a candidate that does not even load is a failure of the candidate
            raise LoadError("loading: %s: %s" % (type(e).__name__, e))
        self.ref, self.cand = build_models(self.ref_mod, self.cand_mod, self.protocol, self.device)
        self.outputs = None

    def run(self, seed, exchange):
        import torch
        inputs = seeded_inputs(self.ref_mod, seed, self.device)
        if self.device.startswith("cuda"):
            poison_allocator(self.device)
        self.outputs = None
        with torch.no_grad():
            out = self.cand(*inputs)
        synchronize(self.device)
        outs = checked_outputs(out, inputs)
        del out, inputs
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()  # the inputs' blocks back to the GPU while the harness compares
        if isinstance(outs, dict):
            return outs
        if self.device.startswith("cuda"):
            try:
                shared = share_outputs(outs)
                self.outputs = outs  # alive while the harness reads them
                return shared
            except Exception as e:  # no CUDA IPC here: files
                print("kforge candidate worker: CUDA IPC failed (%s: %s); outputs go through files"
                      % (type(e).__name__, e), file=sys.stderr)
        return write_outputs(outs, exchange)

    def write_files(self, exchange):
        """The outputs the last run shared, as files (the harness could not map them)."""
        if self.outputs is None:
            return {"outcome": "runtime_fault", "message": "harness: no outputs to write"}
        return write_outputs(self.outputs, exchange)

    def release(self):
        # Scratch a kforge candidate grew (cuDNN plans that want more than the program's workspace)
        # is freed, so this process does not hold gigabytes the next candidate needs.
        release = getattr(self.cand_mod, "kforge_release", None)
        self.ref = self.cand = self.outputs = None
        if callable(release):
            release()


class LoadError(Exception):
    pass


def handle(req, state, exchange):
    """One command; returns (answer, state)."""
    cmd = req.get("cmd")
    if cmd == "load":
        if state is not None:
            state.release()
        try:
            return {"loaded": True}, Candidate(req)
        except LoadError as e:
            return {"outcome": "runtime_fault", "message": str(e)}, None
    if cmd == "release":
        if state is not None:
            state.release()
        return {"released": True}, None
    if state is None:
        return {"outcome": "runtime_fault", "message": "harness: '%s' before a successful load" % cmd}, None
    if cmd == "run":
        return state.run(int(req["seed"]), exchange), state
    if cmd == "write_files":
        return state.write_files(exchange), state
    if cmd == "profile":
        return timing.profile(state.ref_mod, state.cand_mod, state.protocol, state.device,
                              timing_from(req.get("timing")), StreamWatch(torch_module()), trials=int(req["trials"])), state
    return {"outcome": "runtime_fault", "message": "harness: unknown command %r" % cmd}, state


def serve(exchange):
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import torch
    state = None
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            ans, state = handle(req, state, exchange)
        except Exception as e:
            ans = failure_of(e)
        if state is None or "outcome" in ans:
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        answers.write(json.dumps(ans) + "\n")
        answers.flush()
        if ans.get("outcome") == "runtime_fault" and any(m in ans.get("message", "") for m in FATAL_MARKERS):
            return 3
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m kforge.candidate_worker", description=__doc__.split("\n\n")[0])
    ap.add_argument("--exchange", required=True, help="the directory the outputs are written to")
    ap.add_argument("--parent", type=int, default=0, help="the harness's pid: this process dies with it")
    args = ap.parse_args(argv)
    if args.parent:
        die_with_parent(args.parent)
    return serve(args.exchange)


def die_with_parent(parent):
    """Killed (SIGKILL) when the harness that started it dies; gone already if it died first."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except Exception:
        pass
    if os.getppid() != parent:
        sys.exit(1)


if __name__ == "__main__":
    sys.exit(main())
