"""kforge as a torch.compile backend: `torch.compile(model, backend="kforge")`.

Dynamo hands the backend an FX graph per captured region (its graph breaks leave the rest to Python). The
backend splits the graph into what kforge's importer captures and what it does not (fx_split.py), writes
each taken part as a KernelBench problem (fx_problem.py), plans it with the shipped policy and exports it
as a load_inline ModelNew through the `kforge` executable, verifies it on its first call against eager on
the same inputs within the protocol's tolerance, and runs the rest in eager PyTorch. docs/torch-compile.md
describes the behaviour, the options and the limits.
"""
import contextlib
import dataclasses
import importlib.util
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

import torch

from . import compile_cache, core, fx_split, importer
from .fx_problem import NotWritable, problem_source, tensor_meta
from .protocol import NAMED as PROTOCOLS

BACKEND_NAME = "kforge"


class KforgeUnavailable(RuntimeError):
    """The backend was asked for something it refuses (CPU inputs with on_cpu="refuse", strict mode)."""


@dataclass
class Options:
    protocol: str = "cuda-agent"       # the tolerance of the first-call check: cuda-agent 1e-2, kernelbench 1e-4
    atol: Optional[float] = None       # overrides the protocol's
    rtol: Optional[float] = None
    policy: Optional[str] = None       # kforge optimize --policy (default: the shipped learned policy)
    turns: Optional[int] = None        # kforge optimize --turns
    cache_dir: Optional[str] = None    # default $KFORGE_CACHE_DIR or ~/.cache/kforge/torch-compile
    verify: bool = True                # check each program against eager on its first call
    on_cpu: str = "plan"               # CPU inputs: "plan" (plan on the cost model, run eager) or "refuse"
    strict: bool = False               # raise instead of leaving a part to eager when kforge fails on it
    verbose: bool = True               # one line per graph on stderr

    def tolerance(self):
        _, atol, rtol, _ = PROTOCOLS[self.protocol]
        return (atol if self.atol is None else self.atol), (rtol if self.rtol is None else self.rtol)

    def key_options(self):
        """The options that change what is built (the cache key's part)."""
        return {"protocol": self.protocol, "policy": self.policy, "turns": self.turns}


def options_from(values):
    names = {f.name for f in dataclasses.fields(Options)}
    unknown = sorted(set(values or {}) - names)
    if unknown:
        raise ValueError(f"kforge backend: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    opts = Options(**(values or {}))
    if opts.protocol not in PROTOCOLS:
        raise ValueError(f"kforge backend: protocol {opts.protocol!r} is not one of {', '.join(PROTOCOLS)}")
    if opts.on_cpu not in ("plan", "refuse"):
        raise ValueError(f"kforge backend: on_cpu={opts.on_cpu!r}: use \"plan\" or \"refuse\"")
    return opts


# ---------------------------------------------------------------- the summary


@dataclass
class PartReport:
    name: str
    ops: list                          # the callables of the part, in graph order
    taken: bool = False                # runs kforge's program (GPU, built and not failed)
    planned: bool = False              # kforge captured and planned it (on CPU: only planned)
    reason: str = ""                   # why it was left to eager
    cache_hit: bool = False
    kernels: int = 0
    agent_turns: Optional[int] = None
    predicted_seconds: Optional[float] = None
    build_seconds: float = 0.0         # this process's kforge work for it (0 on a cache hit)
    verified: Optional[bool] = None
    max_abs_err: Optional[float] = None
    eager_seconds: Optional[float] = None   # measured on the first call (GPU, verify on)
    kforge_seconds: Optional[float] = None


@dataclass
class GraphReport:
    index: int
    device: str
    ops: int
    parts: list = field(default_factory=list)
    left: dict = field(default_factory=dict)   # node -> why kforge did not take it
    note: str = ""

    def ops_taken(self):
        return sum(len(p.ops) for p in self.parts if p.taken)

    def ops_planned(self):
        return sum(len(p.ops) for p in self.parts if p.planned)

    def line(self):
        taken = self.ops_taken()
        if self.device == "cpu":
            head = (f"graph {self.index} (cpu): {self.ops} ops, {self.ops_planned()} planned by kforge, "
                    f"all run in eager PyTorch (kforge builds CUDA kernels; on a GPU the planned parts would be taken)")
        else:
            head = f"graph {self.index} ({self.device}): {self.ops} ops, {taken} taken by kforge, {self.ops - taken} left to eager"
        hits = sum(p.cache_hit for p in self.parts)
        if self.parts:
            head += f"; {len(self.parts)} part(s), {hits} from the cache"
        if self.note:
            head += f"; {self.note}"
        return head


SESSION = []   # GraphReport of every graph compiled in this process


def reset():
    SESSION.clear()


def summary():
    """The per-model summary: each dynamo graph, its parts, the ops taken and left and why."""
    if not SESSION:
        return "kforge: no graphs compiled yet"
    out = [f"kforge torch.compile summary: {len(SESSION)} graph(s) from dynamo"]
    total = sum(g.ops for g in SESSION)
    taken = sum(g.ops_taken() for g in SESSION)
    planned = sum(g.ops_planned() for g in SESSION)
    out.append(f"  ops: {total} in all, {taken} taken by kforge, {planned} planned, {total - taken} run in eager")
    for g in SESSION:
        out.append("  " + g.line())
        for p in g.parts:
            state = "taken" if p.taken else ("planned" if p.planned else "left")
            extra = []
            if p.kernels:
                extra.append(f"{p.kernels} kernel(s)")
            if p.predicted_seconds is not None:
                extra.append(f"predicted {p.predicted_seconds * 1e6:.1f} us")
            if p.eager_seconds and p.kforge_seconds:
                extra.append(f"eager {p.eager_seconds * 1e6:.1f} us vs kforge {p.kforge_seconds * 1e6:.1f} us "
                             f"(saves {(p.eager_seconds - p.kforge_seconds) * 1e6:.1f} us a call)")
            if p.verified is not None:
                extra.append("verified" if p.verified else "verification failed")
            extra.append("cache hit" if p.cache_hit else f"kforge {p.build_seconds:.1f} s")
            if p.reason:
                extra.append(p.reason)
            out.append(f"    {p.name} [{state}] {len(p.ops)} ops ({', '.join(sorted(set(p.ops)))}): {'; '.join(extra)}")
        reasons = {}
        for node, why in g.left.items():
            reasons.setdefault(why, []).append(node)
        for why, nodes in sorted(reasons.items()):
            shown = ", ".join(nodes[:4]) + (f" and {len(nodes) - 4} more" if len(nodes) > 4 else "")
            out.append(f"    left to eager: {shown}: {why}")
    return "\n".join(out)


# ---------------------------------------------------------------- one part: capture, plan, build, load


def _graph_device(example_inputs):
    devices = {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)}
    if "cuda" in devices and devices <= {"cuda"}:
        cuda = [x.device for x in example_inputs if isinstance(x, torch.Tensor)]
        return cuda[0]
    return torch.device("cpu")


@contextlib.contextmanager
def _env(name, value):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def load_model_new(path, extensions_dir):
    """Import an exported ModelNew file (load_inline compiles it, or finds its build in extensions_dir)."""
    name = "kforge_compiled_" + os.path.basename(os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    os.makedirs(extensions_dir, exist_ok=True)
    with _env("TORCH_EXTENSIONS_DIR", extensions_dir):
        spec.loader.exec_module(module)
    return module.ModelNew().eval()


def _output_is_tuple(gm):
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    return isinstance(out.args[0], (tuple, list))


class Part:
    """Captures, plans and (on a GPU) builds one part; its report says what happened."""

    def __init__(self, opts, name, sub, metas, device):
        self.opts, self.sub, self.metas, self.device = opts, sub, metas, device
        self.report = PartReport(name, fx_split.op_names(sub))
        self.runner = None

    def prepare(self):
        r = self.report
        try:
            text = problem_source(self.sub, self.metas)
        except NotWritable as e:
            r.reason = str(e)
            return
        entry = compile_cache.Entry(self.opts.cache_dir or compile_cache.default_dir(),
                                    compile_cache.key(text, self.device, self.opts.key_options()))
        data = entry.load()
        r.cache_hit = data is not None
        if data is None:
            t0 = time.monotonic()
            data = self._plan_and_export(text, entry)
            r.build_seconds = time.monotonic() - t0
            entry.store(data)
        r.planned = data["planned"]
        r.reason = data.get("reason", "")
        r.kernels = data.get("kernels", 0)
        r.agent_turns = data.get("agent_turns")
        r.predicted_seconds = data.get("predicted_seconds")
        if self.device.type != "cuda" or not data.get("exported"):
            return
        try:
            t0 = time.monotonic()
            self.runner = load_model_new(entry.path("model_new.py"), os.path.join(entry.root, "torch_extensions"))
            r.build_seconds += 0.0 if r.cache_hit else time.monotonic() - t0
            r.taken = True
        except Exception as e:
            r.reason = f"the exported program did not load: {type(e).__name__}: {str(e).strip().splitlines()[-1:] or ''}"
            entry.store(dict(data, exported=False, reason=r.reason))

    def _plan_and_export(self, text, entry):
        os.makedirs(entry.dir, exist_ok=True)
        graph, reason = fx_split.import_source(text, "part", entry.path("problem.py"))
        if graph is None:
            return {"planned": False, "reason": f"capture: {reason}"}
        entry.write("graph.json", importer.dumps(graph))
        args = ["optimize", entry.path("graph.json"), "--device", "cpu", "--out", entry.path("plan"), "--force",
                "--json", "--protocol", self.opts.protocol]
        if self.opts.policy:
            args += ["--policy", self.opts.policy]
        if self.opts.turns:
            args += ["--turns", self.opts.turns]
        try:
            res = core.run(args, env={"KFORGE_HTML_REPORT": "0"})  # no report.html per small plan
        except core.CoreNotFound as e:
            return {"planned": False, "reason": str(e), "nodes": len(graph["nodes"])}
        if not res.ok:
            return {"planned": False, "reason": f"kforge optimize: {res.message()}"}
        try:
            rep = res.json()
        except ValueError:
            return {"planned": False, "reason": "kforge optimize printed no JSON report"}
        data = {"planned": True, "kernels": len(rep.get("kernels", [])),
                "agent_turns": (rep.get("agent") or {}).get("turns"),
                "predicted_seconds": (rep.get("result") or {}).get("t_candidate"), "exported": False}
        if self.device.type != "cuda":
            return data
        exp = core.run(["export", entry.path("plan"), "--format", "kernelbench", "-o", entry.path("model_new.py"),
                        "--force", "--allow-library-only", "--protocol", self.opts.protocol])
        if not exp.ok:
            return dict(data, reason=f"kforge export: {exp.message()}")
        return dict(data, exported=True)


class KforgePart(torch.nn.Module):
    """Stands in for a taken part in the split graph: kforge's program, checked against the part in
    eager on its first call; a failed check leaves the part to eager from then on (strict: raises)."""

    def __init__(self, sub, runner, report, opts):
        super().__init__()
        self.sub, self.runner, self.report, self.opts = sub, runner, report, opts
        self.tuple_out = _output_is_tuple(sub)
        self.checked = not opts.verify

    def _run_kforge(self, args):
        out = self.runner(*[a.contiguous() if isinstance(a, torch.Tensor) else a for a in args])
        if self.tuple_out:
            return tuple(out) if isinstance(out, (tuple, list)) else (out,)
        return out[0] if isinstance(out, (tuple, list)) else out

    def forward(self, *args):
        if self.runner is None:
            return self.sub(*args)
        if self.checked:
            return self._run_kforge(args)
        self.checked = True
        expected = self.sub(*args)
        try:
            got = self._run_kforge(args)
            reason = compare(got, expected, *self.opts.tolerance())
        except Exception as e:
            got, reason = None, f"the program failed: {type(e).__name__}: {str(e).strip()[:200]}"
        self.report.verified = reason is None
        self.report.max_abs_err = max_abs_err(got, expected) if got is not None else None
        if reason is not None:
            self.report.reason = f"verification: {reason}"
            self.report.taken = False
            if self.opts.strict:
                raise KforgeUnavailable(f"kforge part {self.report.name}: {reason}")
            print(f"kforge: {self.report.name} left to eager: {reason}", file=sys.stderr)
            self.runner = None
            return expected
        self.report.eager_seconds = _time(self.sub, args)
        self.report.kforge_seconds = _time(self._run_kforge, (args,))
        return got


def _flat(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def max_abs_err(got, expected):
    errs = [float((g.double() - e.double()).abs().max()) for g, e in zip(_flat(got), _flat(expected))
            if isinstance(g, torch.Tensor) and g.numel() and g.shape == e.shape]
    return max(errs) if errs else 0.0


def compare(got, expected, atol, rtol):
    """None when every output matches within atol + rtol * |expected|, else what differs."""
    g, e = _flat(got), _flat(expected)
    if len(g) != len(e):
        return f"{len(g)} outputs, eager gives {len(e)}"
    for i, (a, b) in enumerate(zip(g, e)):
        if not isinstance(b, torch.Tensor):
            continue
        if not isinstance(a, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return f"output {i}: {getattr(a, 'shape', type(a))} {getattr(a, 'dtype', '')}, eager gives {tuple(b.shape)} {b.dtype}"
        if not torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True):
            err = float((a.double() - b.double()).abs().max())
            return f"output {i} differs from eager by up to {err:.3g} (atol {atol:g}, rtol {rtol:g})"
    return None


def _time(fn, args, reps=10, warmup=3):
    """Seconds per call in steady state: `warmup` calls first (a kforge program captures its CUDA graph on its
    second call with the same pointers; eager PyTorch picks its kernels on the first), then the median of
    `reps` synchronized calls."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn(*args)
        sync()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


# ---------------------------------------------------------------- the backend


def compile_graph(gm, example_inputs, opts):
    device = _graph_device(example_inputs)
    report = GraphReport(len(SESSION) + 1, device.type if device.type == "cpu" else str(device), fx_split.count_ops(gm))
    SESSION.append(report)
    if device.type == "cpu" and opts.on_cpu == "refuse":
        raise KforgeUnavailable(
            "kforge builds CUDA kernels and this graph's inputs are on the CPU: move the model and its inputs "
            "to a CUDA device (model.cuda()), or pass options={'on_cpu': 'plan'} to have kforge plan the graph "
            "and run it in eager PyTorch")
    if torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
        report.note = ("left to eager: autograd is on and kforge's kernels have no backward; run inference under "
                       "torch.no_grad() or torch.inference_mode()")
        _say(opts, report)
        return gm.forward
    support = fx_split.KforgeSupport()
    split_gm, names = fx_split.split(gm, support)
    report.left = dict(support.reasons)
    calls = {n.target: n for n in split_gm.graph.nodes if n.op == "call_module"}
    for name in names:
        sub = getattr(split_gm, name)
        try:
            metas = [tensor_meta(a) for a in calls[name].args]
        except NotWritable as e:
            report.parts.append(PartReport(name, [], reason=str(e)))
            continue
        prepare_part(opts, report, split_gm, name, sub, metas, device)
    _say(opts, report)
    if not any(p.taken for p in report.parts):
        return gm.forward
    split_gm.recompile()
    return split_gm.forward


MAX_HALVINGS = 4  # a part kforge fails on is halved at most this often (16 pieces) before it stays eager


def prepare_part(opts, report, holder, name, sub, metas, device, depth=0):
    """Prepares part `name` of `holder`; when kforge fails on it as a whole after its capture (plan, export or
    load), halves it and tries each half, so that one op kforge cannot build costs that op, not the part."""
    part = Part(opts, name, sub, metas, device)
    part.prepare()
    r = part.report
    usable = part.runner is not None or (device.type != "cuda" and r.planned)
    if not usable and depth < MAX_HALVINGS and len(r.ops) >= 2 and r.reason and not r.reason.startswith("capture"):
        try:
            halved, names = fx_split.halve(sub, metas, prefix=f"{name}_")
        except Exception:  # the halves are a refinement; without them the part stays eager as it is
            names = []
        if len(names) >= 2:
            calls = {n.target: n for n in halved.graph.nodes if n.op == "call_module"}
            setattr(holder, name, halved)
            for inner in names:
                try:
                    inner_metas = [tensor_meta(a) for a in calls[inner].args]
                except NotWritable as e:
                    report.parts.append(PartReport(inner, fx_split.op_names(getattr(halved, inner)), reason=str(e)))
                    continue
                prepare_part(opts, report, halved, inner, getattr(halved, inner), inner_metas, device, depth + 1)
            return
    report.parts.append(r)
    if opts.strict and not r.planned:
        raise KforgeUnavailable(f"kforge part {name}: {r.reason}")
    if part.runner is not None:
        setattr(holder, name, KforgePart(sub, part.runner, r, opts))


def _say(opts, report):
    if opts.verbose:
        print(f"kforge: {report.line()}", file=sys.stderr)


def kforge_backend(gm, example_inputs, **kwargs):
    """The backend torch.compile calls: `torch.compile(model, backend="kforge", options={...})`."""
    opts = options_from(kwargs.get("options"))
    try:
        return compile_graph(gm, list(example_inputs), opts)
    except KforgeUnavailable:
        raise
    except Exception as e:  # a bug of the backend costs the speed-up, never the user's model (strict: raises)
        if opts.strict:
            raise
        note = f"left to eager: the kforge backend failed: {type(e).__name__}: {str(e).strip()[:300]}"
        if SESSION and not SESSION[-1].note:
            SESSION[-1].note = note
        print(f"kforge: {note}", file=sys.stderr)
        return gm.forward


def register():
    """Registers "kforge" with dynamo (the package's torch_dynamo_backends entry point does it when
    installed; importing kforge.torch_backend does it in a source tree)."""
    from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS, register_backend
    # An entry point found but not loaded yet: dynamo loads it (this module) and registers what it names.
    if BACKEND_NAME not in _COMPILER_FNS and _BACKENDS.get(BACKEND_NAME) is None:
        register_backend(kforge_backend, name=BACKEND_NAME)


register()
