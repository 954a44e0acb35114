# kforge importer: trace a KernelBench problem (PyTorch) on meta tensors and write kforge.graph/1 JSON.
"""Usage: python3 -m kforge.importer PROBLEM.py [-o OUT.json] [--mode eval|train] | --list-ops

The problem file is loaded as a module; Model(*get_init_inputs()) is built and get_inputs() is called
with every tensor factory forced onto the meta device (a 6 GB input costs nothing), then forward runs
under a TorchFunctionMode that records each top-level torch call as nodes (see import_ops.py for the
callable -> op table; a Python torch function without a rule is traced into, a C++ one is captured as ATen
ops by aten_capture.py). Shapes and dtypes on nodes are what torch computed. The format is described in
docs/graph-format.md; ops and attrs are checked against src/ir/ops.def before anything is written.
"""
import argparse
import contextlib
import importlib.util
import inspect
import itertools
import json
import math
import operator
import os
import random
import re
import sys
import types
import warnings

import torch
from torch.overrides import TorchFunctionMode

from . import complex_pairs
from . import import_ops as ops
from .import_ops import Alias, Args, Unsupported, DTYPES, UserError, InternalError  # noqa: F401

FORMAT = "kforge.graph/1"


# ---------------------------------------------------------------- ops.def schema

_KF_OP = re.compile(r'^KF_OP\((\w+),\s*"([a-z0-9_]+)",\s*(\w+),\s*"([^"]*)",\s*"([^"]*)"\)', re.M)


def ops_def_path():
    env = os.environ.get("KFORGE_OPS_DEF")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(here, "..", "..", "src", "ir", "ops.def")
    installed = os.path.join(here, "_core", "src", "ir", "ops.def")  # pip install . (CMakeLists.txt, SKBUILD)
    return tree if os.path.exists(tree) or not os.path.exists(installed) else installed


def _split_top(s):
    """Split on commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in parts + [cur] if p.strip()]


def _parse_default(text):
    if text == "null":
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return json.loads(text)
    except ValueError:
        return text


def load_schema(path=None):
    """{op name: {"inputs": [(name, ""|"?"|"*")], "attrs": {name: (type, nullable, has_default, default)}}}"""
    path = path or ops_def_path()
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise InternalError(f"cannot read the op registry {path}: {e.strerror}")
    schema = {}
    for _, name, _, ins, attrs in _KF_OP.findall(text):
        inputs = [(i.rstrip("?*"), i[-1] if i[-1] in "?*" else "") for i in _split_top(ins)]
        table = {}
        for a in _split_top(attrs):
            decl, _, default = a.partition("=")
            aname, _, atype = decl.partition(":")
            table[aname] = (atype.rstrip("?"), atype.endswith("?"), "=" in a, _parse_default(default))
        schema[name] = {"inputs": inputs, "attrs": table}
    if not schema:
        raise InternalError(f"no KF_OP entries found in {path}")
    return schema


NON_FINITE = ("inf", "-inf", "nan")


def non_finite_name(v):
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def coerce_attr(op, name, atype, nullable, v):
    """Write an attr value in the schema's type (ints as int lists, dtypes as names, floats as floats)."""
    if v is None:
        if not nullable:
            raise InternalError(f"attr {op}.{name} is null but not nullable")
        return None
    if atype == "int":
        return int(v)
    if atype in ("float", "scalar") and (v in NON_FINITE or not math.isfinite(float(v))):
        return non_finite_name(float(v))  # JSON has no inf or nan: the C++ reader takes these three strings
    if atype == "float":
        return float(v)
    if atype == "bool":
        return bool(v)
    if atype == "str":
        return str(v)
    if atype == "ints":
        return [int(x) for x in v]
    if atype == "dtype":
        return dtype_name(v) if isinstance(v, torch.dtype) else str(v)
    if atype == "scalar":
        return int(v) if isinstance(v, (bool, int)) else float(v)
    raise InternalError(f"unknown attr type {atype} in ops.def ({op}.{name})")


def complete_attrs(schema, op, attrs):
    """Fill schema defaults, coerce types, reject attrs the schema does not know."""
    if op not in schema:
        raise InternalError(f"op {op!r} is not in ops.def")
    table = schema[op]["attrs"]
    unknown = set(attrs) - set(table)
    if unknown:
        raise InternalError(f"attrs {sorted(unknown)} are not in the schema of {op}")
    out = {}
    for name, (atype, nullable, has_default, default) in table.items():
        if name in attrs:
            out[name] = coerce_attr(op, name, atype, nullable, attrs[name])
        elif has_default:
            out[name] = default
        else:
            raise InternalError(f"required attr {op}.{name} not given")
    return out


def validate(graph, schema):
    """Every op and attr from ops.def, input arity per schema, ids defined before use and unique."""
    defined = {v["id"] for v in graph["inputs"]} | {p["id"] for p in graph["params"]}
    if len(defined) != len(graph["inputs"]) + len(graph["params"]):
        raise InternalError("duplicate input/param ids")
    for n in graph["nodes"]:
        op = n["op"]
        if op not in schema:
            raise InternalError(f"node {n['id']}: op {op!r} is not in ops.def")
        if set(n["attrs"]) != set(schema[op]["attrs"]):
            raise InternalError(f"node {n['id']}: attrs {sorted(n['attrs'])} do not match the schema of {op}")
        spec = schema[op]["inputs"]
        variadic = spec and spec[-1][1] == "*"
        fixed = spec[:-1] if variadic else spec
        if len(n["inputs"]) < len(fixed) or (not variadic and len(n["inputs"]) != len(fixed)):
            raise InternalError(f"node {n['id']}: {len(n['inputs'])} inputs for {op}")
        for i, ref in enumerate(n["inputs"]):
            kind = spec[min(i, len(spec) - 1)][1]
            if ref is None and kind != "?":
                raise InternalError(f"node {n['id']}: required input {i} of {op} is null")
            if ref is not None and ref not in defined:
                raise InternalError(f"node {n['id']}: input {ref} is not defined before use")
        if n["id"] in defined:
            raise InternalError(f"duplicate value id {n['id']}")
        defined.add(n["id"])
    for o in graph["outputs"]:
        if o not in defined:
            raise InternalError(f"output {o} is not defined")


# ---------------------------------------------------------------- small helpers

def dtype_name(dt):
    if dt not in DTYPES:
        if dt.is_complex:
            raise Unsupported(f"dtype {dt} here (kforge follows complex tensors inside forward and as parameters "
                              f"or buffers; give and return real tensors: torch.view_as_real(z), "
                              f"torch.view_as_complex(x))")
        raise Unsupported(f"dtype {dt}")
    return DTYPES[dt]


def storage_key(t):
    """Identifies a tensor's storage (a Parameter shares it with the tensor it wraps)."""
    try:
        return t.untyped_storage()._cdata if hasattr(t, "untyped_storage") else t.storage()._cdata
    except Exception:
        return None


def tensors_in(obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in tensors_in(o)]
    return []


def jsonable(v):
    if isinstance(v, (list, tuple, torch.Size)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, torch.dtype):
        return str(v).replace("torch.", "")
    return repr(v)


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


_INPLACE_DUNDERS = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__idiv__", "__ifloordiv__",
                    "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
                    "__imatmul__", "__delitem__"}
_DATA_DEPENDENT = {ops.resolve(f"Tensor.{n}"): n for n in (
    "__bool__", "__nonzero__", "item", "tolist", "__int__", "__float__", "__index__", "__complex__", "numpy",
    "__array__", "nonzero", "unique", "masked_select")}
_DATA_DEPENDENT.pop(None, None)


def is_inplace(func):
    n = getattr(func, "__name__", "")
    return (n.endswith("_") and not n.startswith("_")) or n in _INPLACE_DUNDERS


# ---------------------------------------------------------------- input distributions (get_inputs)

_PRESERVE_DIST = {ops.resolve(n) for n in (
    "Tensor.float Tensor.double Tensor.half Tensor.bfloat16 Tensor.int Tensor.long Tensor.bool Tensor.byte "
    "Tensor.char Tensor.to Tensor.type Tensor.type_as Tensor.cuda Tensor.cpu Tensor.contiguous Tensor.clone "
    "Tensor.detach torch.clone Tensor.requires_grad_ Tensor.view Tensor.reshape torch.reshape Tensor.flatten "
    "torch.flatten Tensor.squeeze Tensor.unsqueeze torch.squeeze torch.unsqueeze Tensor.permute torch.permute "
    "Tensor.transpose torch.transpose Tensor.t Tensor.T.__get__ Tensor.mT.__get__").split()} - {None}


def _nums(args):
    return [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]


def factory_dist(fname, args, kwargs):
    """The dist of a tensor made by a factory call (torch.rand -> uniform 0..1, ...)."""
    base = fname.rsplit(".", 1)[-1]
    base = base[:-5] if base.endswith("_like") else base
    rest = args[1:] if fname.endswith("_like") else args
    if base == "rand":
        return {"kind": "uniform", "low": 0.0, "high": 1.0}
    if base == "randn":
        return {"kind": "normal", "mean": 0.0, "std": 1.0}
    if base == "randint":  # randint(high, size) or randint(low, high, size)
        nums = [int(n) for n in _nums(rest)]
        low, high = nums[:2] if len(nums) >= 2 else (kwargs.get("low", 0), nums[0] if nums else kwargs.get("high"))
        if high is not None:
            return {"kind": "randint", "low": int(low), "high": int(high)}
    if base in ("ones", "zeros"):
        return {"kind": base}
    if base == "full":
        v = kwargs.get("fill_value", rest[1] if len(rest) > 1 else None)
        if v in (0, 1) and not isinstance(v, bool):
            return {"kind": "zeros" if v == 0 else "ones"}
        return {"kind": "unknown", "note": f"full({v!r})"}
    if base == "normal" and len(_nums(args)) >= 2:
        mean, std = _nums(args)[:2]
        return {"kind": "normal", "mean": float(mean), "std": float(std)}
    if base == "empty":
        return {"kind": "unknown", "note": "empty (uninitialized)"}
    return {"kind": "unknown", "note": f"{base}(...)"}


def inplace_init_dist(name, args):
    """x.uniform_(a, b), x.normal_(m, s), x.fill_(v), x.zero_(), x.random_(a, b) applied to an input."""
    n = _nums(args[1:])
    if name == "uniform_":
        lo, hi = (n + [0.0, 1.0][len(n):])[:2]
        return {"kind": "uniform", "low": float(lo), "high": float(hi)}
    if name == "normal_":
        m, s = (n + [0.0, 1.0][len(n):])[:2]
        return {"kind": "normal", "mean": float(m), "std": float(s)}
    if name == "zero_" or (name == "fill_" and n == [0]):
        return {"kind": "zeros"}
    if name == "fill_" and n == [1]:
        return {"kind": "ones"}
    if name == "random_" and n:
        lo, hi = (0, n[0]) if len(n) == 1 else n[:2]
        return {"kind": "randint", "low": int(lo), "high": int(hi)}
    return None


def describe(dist):
    k = dist["kind"]
    if k == "uniform":
        return f"uniform({dist['low']:g}, {dist['high']:g})"
    if k == "normal":
        return f"normal({dist['mean']:g}, {dist['std']:g})"
    if k == "randint":
        return f"randint({dist['low']}, {dist['high']})"
    return dist.get("note", k)


def derived_dist(func, fname, args, out, infos):
    """The dist of a tensor computed from inputs in get_inputs (value-preserving calls keep it)."""
    src = [infos[id(t)][1] for t in tensors_in(args) if id(t) in infos]
    if func in _PRESERVE_DIST and len(src) == 1:
        d = src[0]
        to_bool = out.dtype == torch.bool and args[0].dtype != torch.bool
        if not to_bool and (out.dtype.is_floating_point or not args[0].dtype.is_floating_point):
            return d
        if to_bool and (d["kind"] in ("ones", "zeros") or (d["kind"] == "randint" and d["low"] >= 0 and d["high"] <= 2)):
            return d
        if d["kind"] in ("randint", "ones", "zeros") and out.dtype != torch.bool:
            return d
    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            parts.append(describe(infos[id(a)][1]) if id(a) in infos else "tensor")
        elif isinstance(a, (int, float, bool)):
            parts.append(repr(a))
    note = f"{fname.rsplit('.', 1)[-1].strip('_')}({', '.join(parts)})"
    return {"kind": "unknown", "note": note if len(note) <= 200 else note[:197] + "..."}


# ---------------------------------------------------------------- the tracer

class _Mode(TorchFunctionMode):
    def __init__(self, tracer):
        super().__init__()
        self.tracer = tracer

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.tracer.call(func, args, kwargs or {})


_NO_DISPATCH = ("has_torch_function", "has_torch_function_unary", "has_torch_function_variadic")
_OPAQUE_PY = {"__repr__", "__str__", "__format__", "__reduce__", "__reduce_ex__", "__setstate__", "__dir__",
              "__hash__", "__array__", "__array_wrap__", "__len__", "__contains__", "__deepcopy__"}
_METADATA_INPLACE = ops.METADATA_INPLACE
_VIEW_INDEXERS = {ops.resolve(n) for n in "Tensor.__getitem__ Tensor.select torch.select Tensor.narrow "
                  "torch.narrow".split()} | {ops.tensor_getitem}
_VIEW_INDEXERS.discard(None)
_DIAGONAL_VIEWS = {ops.resolve(n) for n in ("Tensor.diagonal", "torch.diagonal")} - {None}
_TWIN_LIMIT = 1 << 16  # elements: constants this small are also computed on the CPU, so their data can be read


def _undispatched(func):
    """A copy of a Python torch function whose own has_torch_function check answers no: its body runs under
    the mode, so the torch calls it makes are traced one by one instead of the call dispatching again."""
    g = dict(func.__globals__)
    for n in _NO_DISPATCH:
        g[n] = lambda *a, **k: False
    f = types.FunctionType(func.__code__, g, func.__name__, func.__defaults__, func.__closure__)
    f.__kwdefaults__ = func.__kwdefaults__
    return f


def _swap(obj, table):
    """obj with every tensor replaced by table[id(tensor)] (lists, tuples and dicts are rebuilt)."""
    if isinstance(obj, torch.Tensor):
        return table[id(obj)][1]
    if isinstance(obj, (list, tuple)):
        return type(obj)(_swap(o, table) for o in obj)
    if isinstance(obj, dict):
        return {k: _swap(v, table) for k, v in obj.items()}
    return obj


def _extent(t):
    lo = hi = t.storage_offset()
    for n, s in zip(t.shape, t.stride()):
        lo, hi = (lo + (n - 1) * s, hi) if s < 0 else (lo, hi + (n - 1) * s)
    return lo, hi


def _footprint(t):
    off = torch.tensor([t.storage_offset()], dtype=torch.int64, device="cpu")
    for n, s in zip(t.shape, t.stride()):
        off = (off.unsqueeze(-1) + torch.arange(int(n), dtype=torch.int64, device="cpu") * int(s)).reshape(-1)
    return off


def overlaps(a, b):
    """Whether two tensors of one storage share an element: exact for small ones, else by extent."""
    if a.numel() == 0 or b.numel() == 0:
        return False
    (alo, ahi), (blo, bhi) = _extent(a), _extent(b)
    if ahi < blo or bhi < alo:
        return False
    lo, hi = min(alo, blo), max(ahi, bhi)
    if a.numel() + b.numel() > (1 << 22) or hi - lo >= (1 << 26):
        return True
    try:
        marks = torch.zeros(hi - lo + 1, dtype=torch.bool, device="cpu")
        marks[_footprint(a) - lo] = True
        return bool(marks[_footprint(b) - lo].any())
    except Exception:
        return True


class Tracer:
    """Dispatches every torch call by phase: load/init (force meta), inputs (dists), forward (nodes)."""

    def __init__(self, src, shown, schema, ops_def=None):
        self.src, self.shown, self.schema = src, shown, schema
        self.ops_def = ops_def or ops_def_path()
        self.base = os.path.basename(src)
        self.phase = "load"
        self.depth = 0
        self.values = {}     # id(tensor) -> (tensor, value id); the tensor is kept alive
        self.poisoned = {}   # id(tensor) -> (tensor, error message)
        self.infos = {}      # id(tensor) -> (tensor, dist) during get_inputs
        self.created = {}    # storage key -> (tensor, sequence number) during Model construction
        self.twins = {}      # id(meta tensor) -> (meta tensor, CPU tensor): constants whose data is known
        self.by_storage = {}  # storage key -> tensors bound to values (to find the aliases of a mutated one)
        self.views = {}      # id(view) -> (view, base, index, base shape): x[...] views, for in-place write-back
        self.inside = []     # (function, shown name) of the Python torch functions being traced into
        self.bodies = {}     # Python torch function -> its copy that does not dispatch (trace_into)
        self.nodes = []
        self.ids = itertools.count()
        self.model = None
        self.complex = complex_pairs.Pairs(self)  # complex tensors as (re, im) pairs of real ones
        self.params = []     # the graph's params: parameters, buffers, then plain tensor attributes forward reads

    # -- locations
    def user_line(self):
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == self.src:
                return f.f_lineno
            f = f.f_back
        return None

    def where(self):
        line = self.user_line()
        return f"{self.shown}:{line}" if line else self.shown

    def loc(self):
        return f"{self.base}:{self.user_line()}"

    # -- running torch
    def run(self, fn, *args, **kwargs):
        self.depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            self.depth -= 1

    def recording(self):
        """A context in which torch calls are recorded by their rules (for code kforge writes for the model)."""
        return _Mode(self)

    def call(self, func, args, kwargs):
        if func in ops.FACTORIES and not tensors_in(args):
            kwargs = dict(kwargs, device="meta")
            kwargs.pop("pin_memory", None)
        if self.depth:
            return self.run(func, *args, **kwargs)
        if func in _DATA_DEPENDENT and args and isinstance(args[0], torch.Tensor) and self.twin(args[0]) is not None:
            return self.run(func, self.twin(args[0]), *args[1:], **kwargs)  # a constant's data is known
        if self.phase == "forward":
            return self.call_forward(func, args, kwargs)
        rule = ops.RULES.get(func)
        if rule is not None and rule.run is not None:  # device moves: never leave meta
            out = rule.run(self.args(func, rule, args, kwargs, None))
        else:
            out = self.run(func, *args, **kwargs)
        if self.phase == "inputs":
            self.track_input(func, args, kwargs, out)
        elif self.phase == "init":
            for t in tensors_in(out):
                self.created.setdefault(storage_key(t), (t, len(self.created)))
        self.twin_call(func, args, kwargs, out)
        return out

    def args(self, func, rule, args, kwargs, out):
        name = ops.callable_name(func)
        try:
            bound = rule.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise UserError(f"{self.where()}: unsupported call form of {ops.display_name(name)}: {e}")
        bound.apply_defaults()
        return Args(name, dict(bound.arguments), out, self.run)

    # -- constants whose data is known at import time (twins: real CPU tensors beside the meta ones)
    def twin(self, t):
        hit = self.twins.get(id(t))
        return hit[1] if hit is not None and hit[0] is t else None

    def twin_call(self, func, args, kwargs, out):
        """Compute a call's CPU twin when its inputs are all twins (or it is a deterministic factory)."""
        outs = tensors_in(out)
        if out is None and is_inplace(func) and args and isinstance(args[0], torch.Tensor):
            outs = [args[0]]  # x[i] = v returns None
        if not outs or (not self.twins and func not in ops.TWIN_FACTORIES):
            return
        ins = tensors_in(list(args) + list(kwargs.values()))
        mutating = is_inplace(func) and ins and getattr(func, "__name__", "") not in _METADATA_INPLACE
        known = func not in ops.RANDOM and all(self.twin(t) is not None for t in ins)
        if known and not ins:
            known = func in ops.TWIN_FACTORIES
            kwargs = dict(kwargs, device="cpu")
        if known and getattr(func, "__name__", "") in ("cuda", "cpu", "to") and len(outs) == 1:
            self.twins[id(outs[0])] = (outs[0], self.twin(ins[0]).to(outs[0].dtype))  # the twins stay on the CPU
            return
        if known and sum(t.numel() for t in outs) <= _TWIN_LIMIT:
            try:
                res, ran = self.run(func, *_swap(list(args), self.twins), **_swap(kwargs, self.twins)), True
            except Exception:
                res, ran = None, False
            cpu = tensors_in(res)
            if ran and out is None and mutating:
                return  # x[i] = v: the twin was updated the same way
            if len(cpu) == len(outs) and all(c.shape == m.shape and c.dtype == m.dtype for c, m in zip(cpu, outs)):
                for m, c in zip(outs, cpu):
                    self.twins[id(m)] = (m, c)
                return
        if mutating:  # a twin whose meta tensor changed in a way we could not follow
            key = storage_key(ins[0])
            for k, (m, _) in list(self.twins.items()):
                if storage_key(m) == key:
                    del self.twins[k]

    # -- get_inputs: remember where each tensor came from
    def track_input(self, func, args, kwargs, out):
        name = ops.callable_name(func)
        if func in ops.FACTORIES:
            self.infos[id(out)] = (out, factory_dist(name, args, kwargs))
            return
        init = inplace_init_dist(getattr(func, "__name__", ""), args) if args and id(args[0]) in self.infos else None
        if init is not None:
            self.infos[id(out)] = (out, init)
            return
        for t in tensors_in(out):
            if id(t) not in self.infos or self.infos[id(t)][0] is not t or is_inplace(func):
                self.infos[id(t)] = (t, derived_dist(func, name, args, t, self.infos))

    # -- forward: record nodes
    def call_forward(self, func, args, kwargs):
        name = ops.callable_name(func)
        shown = ops.display_name(name)
        if complex_pairs.involved(func, args, kwargs):
            return self.complex.call(func, shown, args, kwargs)
        if func in _DATA_DEPENDENT:
            what = _DATA_DEPENDENT[func]
            if what in ("__bool__", "__nonzero__"):
                raise UserError(f"{self.where()}: data-dependent control flow: a tensor value decides a Python "
                                f"branch ({shown}); the importer traces shapes only")
            raise UserError(f"{self.where()}: data-dependent value: {shown} reads tensor data into Python")
        if func in ops.RANDOM:
            return self.call_random(func, shown, args, kwargs)
        rule = ops.RULES.get(func)
        if rule is None:
            return self.call_unknown(func, shown, args, kwargs)
        loc = self.loc()
        a = self.args(func, rule, args, kwargs, None)
        a.out = self.compute(func, rule, a, args, kwargs, shown)
        try:
            plan = rule.norm(a)
        except Unsupported as e:
            unsupported = f"{self.where()}: unsupported use of {shown}: {e}"
            if rule.run is None and not self.mutates(func) and not inspect.isfunction(func):
                return self.capture_instead(func, shown, args, kwargs, a.out, unsupported)
            raise UserError(unsupported)
        except UserError:
            raise
        except Exception as e:
            raise InternalError(f"normalizing {shown} at {self.where()}: {type(e).__name__}: {e}") from e
        self.materialize(plan, a.out, loc, shown)
        if self.mutates(func) and isinstance(args[0], torch.Tensor):
            self.mutated(args[0], shown, loc)
        if func in _VIEW_INDEXERS and isinstance(a.out, torch.Tensor):
            self.record_view(a)
        self.twin_call(func, args, kwargs, a.out)
        return a.out

    def capture_instead(self, func, shown, args, kwargs, out, unsupported):
        """A call whose rule refuses these arguments (torch.baddbmm with beta=0.5) is captured as an ATen graph
        instead, as a callable without a rule is; when that fails too, both reasons are said."""
        from . import aten_capture
        try:
            out = aten_capture.capture(self, func, shown, args, kwargs, out)
        except aten_capture.CaptureFailed as e:
            raise UserError(f"{unsupported}; captured through ATen instead: {e}") from None
        for t in tensors_in(out):  # a result the capture could not express either: both reasons at its use
            bad = self.poisoned.get(id(t))
            if bad is not None and bad[0] is t:
                self.poison(t, f"{unsupported}; captured through ATen instead: {bad[1]}")
        self.twin_call(func, args, kwargs, out)
        return out

    def compute(self, func, rule, a, args, kwargs, shown):
        """Run the real callable on meta tensors (or the rule's own runner / meta fallback)."""
        try:
            if rule.run is not None:
                return rule.run(a)
            return self.run(func, *args, **kwargs)
        except (UserError, InternalError):
            raise
        except Exception as e:
            if rule.fallback is not None:
                return self.run(rule.fallback, a)
            if "nonzero" in str(e) or "data-dependent" in str(e) or "data dependent" in str(e):
                raise UserError(f"{self.where()}: {shown}: its result's shape depends on the tensor's values (as "
                                f"torch.nonzero, torch.where(cond), masked_select and unique do); kforge builds "
                                f"static shapes: keep the shape with torch.where(cond, x, other) or a multiply by "
                                f"the mask")
            if "Meta" in str(e) and isinstance(e, (NotImplementedError, RuntimeError)):
                raise UserError(f"{self.where()}: {shown} has no meta-tensor kernel in torch {torch.__version__}")
            raise UserError(f"{self.where()}: {shown}: {type(e).__name__}: {first_line(e)}")

    def call_random(self, func, shown, args, kwargs):
        """A random draw in forward: its value is not a function of the inputs, so it cannot be checked
        against the reference (which draws its own numbers); an error where the draw is used."""
        out = self.run(func, *args, **kwargs)
        msg = (f"{self.where()}: {shown} draws random numbers inside forward, so the output is not a function of "
               f"the inputs and kforge cannot verify it against the reference; draw the tensor once in __init__ "
               f"(self.register_buffer(...)) or return it from get_inputs()")
        for t in tensors_in(out):
            self.poison(t, msg)
        return out

    def call_unknown(self, func, shown, args, kwargs):
        """No rule: a Python function is traced into; a C++ one is captured as an ATen graph (aten_capture).
        A call whose results are never used is fine (size(), dim(), ...); a failed capture errs at use."""
        if kwargs.get("out") is not None:
            raise UserError(f"{self.where()}: unsupported torch callable {shown} (out=)")
        if (inspect.isfunction(func) and all(func is not f for f, _ in self.inside) and func.__name__ not in _OPAQUE_PY
                and func.__code__.co_filename != self.src):
            return self.trace_into(func, shown, args, kwargs)
        if self.inside:
            shown = f"{shown} (inside {self.inside[0][1]})"
        msg, blamed = f"{self.where()}: unsupported torch callable {shown}", False
        for t in tensors_in(list(args) + list(kwargs.values())):  # blame the first unsupported call
            bad = self.poisoned.get(id(t))
            if bad is not None and bad[0] is t:
                msg, blamed = bad[1], True
                break
        try:
            out = self.run(func, *args, **kwargs)
        except AssertionError as e:  # the model's own check (torch._assert) failed: say what it says
            raise UserError(f"{self.where()}: the model's assertion failed: {first_line(e)} (with the shapes of "
                            f"get_inputs() and get_init_inputs(); fix those or the model)") from None
        except Exception:
            raise UserError(msg)
        if not tensors_in(out):
            return out
        from . import aten_capture
        try:
            if blamed:
                raise aten_capture.CaptureFailed(msg)
            out = aten_capture.capture(self, func, shown, args, kwargs, out)
        except aten_capture.CaptureFailed as e:
            for t in tensors_in(out):
                if not self.bound(t) or self.mutates(func):
                    self.poison(t, str(e))
                    self.poison_overlapping(t, [t], str(e))
        if func in _DIAGONAL_VIEWS and isinstance(out, torch.Tensor) and self.bound(out):
            self.record_diagonal_view(args, kwargs, out)
        self.twin_call(func, args, kwargs, out)
        return out

    def trace_into(self, func, shown, args, kwargs):
        """Run a Python torch function's body under the mode: each torch call in it is recorded by its rule."""
        body = self.bodies.get(func)
        if body is None:
            body = self.bodies[func] = _undispatched(func)
        self.inside.append((func, shown))
        try:
            with _Mode(self):
                return body(*args, **kwargs)
        except UserError as e:
            text = str(e)
            raise UserError(text if "(inside " in text else f"{text} (inside {shown})") from None
        finally:
            self.inside.pop()

    # -- values
    def value_of(self, t):
        hit = self.values.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        bad = self.poisoned.get(id(t))
        if bad is not None and bad[0] is t:
            raise UserError(bad[1])
        vid = self.attribute_param(t)
        if vid is not None:
            return vid
        raise UserError(f"{self.where()}: tensor is not derived from forward's inputs, parameters or buffers (a "
                        f"tensor made outside the model, or kept in a list or dict attribute? register it with "
                        f"register_buffer)")

    def attribute_param(self, t):
        """A tensor the model keeps as a plain attribute (self.mask = torch.tril(...) in __init__, not a buffer),
        first read in forward: a graph param of kind "attribute" (ModelNew makes it a non-persistent buffer).
        Returns its value id (of the real view for a complex one), or None when t is no such attribute."""
        if self.phase != "forward" or self.model is None or isinstance(t, torch.nn.Parameter):
            return None
        path = next((f"{p + '.' if p else ''}{k}" for p, m in self.model.named_modules() for k, v in vars(m).items()
                     if v is t and not k.startswith("_")), None)
        if path is None:
            return None
        return self.add_param(path, "attribute", t)

    def add_param(self, path, kind, t):
        """t (a parameter, buffer or attribute of the model at `path`) as the graph param p<k>; a complex one
        as its real view (shape + [2], "complex": true), split into parts where forward reads it."""
        pid = f"p{len(self.params)}"
        complex_view = t.is_complex() and t.dtype in complex_pairs.REAL_OF
        held = (self.run(torch.empty, [*t.shape, 2], dtype=complex_pairs.REAL_OF[t.dtype], device="meta")
                if complex_view else t)
        try:
            dt = dtype_name(held.dtype)
        except Unsupported as e:
            raise UserError(f"{self.shown}: {kind} `{path}`: unsupported {e}")
        entry = {"id": pid, "path": path, "kind": kind, "shape": [int(s) for s in held.shape], "dtype": dt}
        self.params.append(dict(entry, complex=True) if complex_view else entry)
        self.bind(held, pid)
        if complex_view:
            self.complex.store(t, held)
        return pid

    def bound(self, t):
        hit = self.values.get(id(t))
        return hit is not None and hit[0] is t

    def bind(self, t, vid):
        if not self.bound(t):
            self.by_storage.setdefault(storage_key(t), []).append(t)
        self.values[id(t)] = (t, vid)
        self.poisoned.pop(id(t), None)

    def poison(self, t, msg):
        """t's value cannot be expressed: using it is an error with msg."""
        self.values.pop(id(t), None)
        self.poisoned[id(t)] = (t, msg)

    # -- in-place updates: functional rebinding
    def mutates(self, func):
        """An in-place call that changes values (not one that only changes a view's shape)."""
        return is_inplace(func) and getattr(func, "__name__", "") not in _METADATA_INPLACE

    def record_view(self, a):
        """Remember that a.out is the view a.input[index] (x[...], select, narrow), for write-back."""
        base, out = a.input, a.out
        if not isinstance(base, torch.Tensor) or storage_key(out) != storage_key(base):
            return
        if hasattr(a, "index") and not hasattr(a, "dim"):
            index = a.index
        else:
            d = ops.dim(a.dim, base.dim())
            if hasattr(a, "length"):
                start = int(a.start) + int(base.shape[d]) if int(a.start) < 0 else int(a.start)
                index = (slice(None),) * d + (slice(start, start + int(a.length)),)
            else:
                index = (slice(None),) * d + (int(a.index),)
        self.views[id(out)] = (out, base, index, ops.shape(base))

    def record_diagonal_view(self, args, kwargs, out):
        """Remember that out is x.diagonal(offset, dim1, dim2), for write-back (cov.diagonal().add_(eps))."""
        base = args[0]
        if not isinstance(base, torch.Tensor) or storage_key(out) != storage_key(base):
            return
        rest = list(args[1:]) + [None] * 3
        offset = kwargs.get("offset", rest[0] if rest[0] is not None else 0)
        d1 = kwargs.get("dim1", rest[1] if rest[1] is not None else 0)
        d2 = kwargs.get("dim2", rest[2] if rest[2] is not None else 1)
        view = ops.DiagonalView(int(offset), ops.dim(d1, base.dim()), ops.dim(d2, base.dim()))
        self.views[id(out)] = (out, base, view, ops.shape(base))

    def mutated(self, t, shown, loc):
        """t was just updated in place and is bound to its new value: write the update back into the bases
        it is an x[...] (or x.diagonal()) view of, and make every other tensor whose memory overlaps an error to
        use."""
        chain, cur = [t], t
        while True:
            v = self.views.get(id(cur))
            if v is None or v[0] is not cur:
                break
            _, base, index, base_shape = v
            if ops.shape(base) != base_shape or not self.bound(base):
                break
            try:
                self.materialize(ops.write_plan(base, index, cur, self.run, base), base, loc, shown)
            except (UserError, Unsupported):
                break
            chain.append(base)
            cur = base
        self.poison_overlapping(t, chain, f"{self.where()}: {shown} updates memory in place that this tensor "
                                          f"shares (a view taken before the update); kforge follows an in-place "
                                          f"update only through the updated tensor itself and the x[...] views it "
                                          f"was taken from (make the update out-of-place)")

    def poison_overlapping(self, t, keep, msg):
        """Every bound tensor but those in `keep` whose memory overlaps t's becomes an error to use."""
        seen = {id(k) for k in keep}
        for o in self.by_storage.get(storage_key(t), ()):
            if id(o) not in seen and self.bound(o):
                seen.add(id(o))
                if self.run(overlaps, o, t):
                    self.poison(o, msg)

    def input_id(self, x, loc):
        if x is None:
            return None
        if isinstance(x, torch.Tensor):
            return self.value_of(x)
        if isinstance(x, ops.Const) or ops.is_num(x):
            value, dt = (x.value, x.dtype) if isinstance(x, ops.Const) else (x, None)
            t = self.run(torch.tensor, value, dtype=dt, device="meta")
            return self.new_node("full", [], {"shape": [], "value": value, "dtype": t.dtype}, t, loc)
        raise UserError(f"{self.where()}: unsupported operand of type {type(x).__name__}")

    def materialize(self, plan, out, loc, shown):
        for step in plan if isinstance(plan, list) else [plan]:
            target = out if step.out is None else step.out
            if not isinstance(target, torch.Tensor):
                raise InternalError(f"{shown}: plan step has no tensor result")
            if isinstance(step, Alias):
                self.bind(target, self.value_of(step.src))
                continue
            if step.op not in self.schema:
                raise UserError(f"{self.where()}: {shown} needs the op `{step.op}`: kforge has no op for {step.op} yet "
                                f"(it is not in {os.path.basename(self.ops_def)})")
            try:
                ins = [self.input_id(x, loc) for x in step.inputs]
                self.new_node(step.op, ins, step.attrs, target, loc)
            except Unsupported as e:
                raise UserError(f"{self.where()}: unsupported use of {shown}: {e}")

    def new_node(self, op, inputs, attrs, t, loc):
        vid = f"t{next(self.ids)}"
        self.nodes.append({"id": vid, "op": op, "inputs": inputs, "attrs": complete_attrs(self.schema, op, attrs),
                           "shape": [int(s) for s in t.shape], "dtype": dtype_name(t.dtype), "loc": loc})
        self.bind(t, vid)
        return vid


# ---------------------------------------------------------------- loading the problem file

_counter = itertools.count()


@contextlib.contextmanager
def tracing_patches():
    """While importing: SDPA polyfill on torch 1.x; x[i] routed through __torch_function__ (1.13 skips it)."""
    F = torch.nn.functional
    saved = {k: torch.Tensor.__dict__.get(k) for k in ("__getitem__", "__setitem__")}
    torch.Tensor.__getitem__ = ops.tensor_getitem
    torch.Tensor.__setitem__ = ops.tensor_setitem
    polyfill = not hasattr(F, "scaled_dot_product_attention")
    if polyfill:
        F.scaled_dot_product_attention = ops.sdpa_polyfill
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                delattr(torch.Tensor, k)
            else:
                setattr(torch.Tensor, k, v)
        if polyfill:
            del F.scaled_dot_product_attention


@contextlib.contextmanager
def preserved_rng():
    state, py = torch.random.get_rng_state(), random.getstate()
    try:
        yield
    finally:
        torch.random.set_rng_state(state)
        random.setstate(py)


def load_module(src, shown):
    try:
        with open(src, "rb") as f:
            f.read()
    except OSError as e:
        raise UserError(f"cannot read problem file {shown}: {e.strerror}")
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(src))[0])
    name = f"_kforge_problem_{next(_counter)}_{stem}"
    spec = importlib.util.spec_from_file_location(name, src)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise UserError(f"{shown}:{e.lineno}: syntax error: {e.msg}")
    finally:
        sys.modules.pop(name, None)
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise UserError(f"{shown}: missing `{attr}` (a KernelBench problem defines class Model, get_inputs() "
                            f"and get_init_inputs())")
    if not (isinstance(module.Model, type) and issubclass(module.Model, torch.nn.Module)):
        raise UserError(f"{shown}: `Model` is not a torch.nn.Module subclass")
    return module


def user_error_from(e, src, shown):
    """An exception raised by the user's code: locate the innermost frame of the problem file."""
    line, tb = None, e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == src:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None:
        return None
    return UserError(f"{shown}:{line}: {type(e).__name__}: {first_line(e)}")


def forward_arg_names(model, n):
    names, var = [], None
    for p in inspect.signature(model.forward).parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            var = p.name
    while len(names) < n:
        names.append(f"{var or 'arg'}{len(names)}")
    return names[:n]


# ---------------------------------------------------------------- graph assembly

def prune(nodes, outputs):
    """Dead-code elimination from the outputs, then renumber v0, v1, ... (order stays topological)."""
    live = set(outputs)
    for n in reversed(nodes):
        if n["id"] in live:
            live.update(i for i in n["inputs"] if i is not None)
    kept = [n for n in nodes if n["id"] in live]
    rename = {n["id"]: f"v{i}" for i, n in enumerate(kept)}
    for n in kept:
        n["id"] = rename[n["id"]]
        n["inputs"] = [rename.get(i, i) for i in n["inputs"]]
    return kept, [rename.get(o, o) for o in outputs]


def import_problem(path, mode="eval", ops_def=None):
    """Import one problem file; returns the graph as a dict. Raises UserError / InternalError."""
    if mode not in ("eval", "train"):
        raise UserError(f"unknown mode {mode!r} (eval or train)")
    schema = load_schema(ops_def)
    src, shown = os.path.abspath(path), path
    tracer = Tracer(src, shown, schema, ops_def)
    try:
        with preserved_rng(), tracing_patches(), warnings.catch_warnings(), _Mode(tracer):
            warnings.simplefilter("ignore")  # torch's deprecation notes would point at the importer
            module = load_module(src, shown)
            tracer.phase = "init"
            init_args = list(module.get_init_inputs())
            model = module.Model(*init_args)
            tracer.phase = "inputs"
            inputs = list(module.get_inputs())
            tracer.phase = "setup"
            model.train(mode == "train")
            tracer.model = model
            graph_inputs, call_args, forward_args = bind_inputs(tracer, model, inputs)
            params = bind_params(tracer, model)
            tracer.phase = "forward"
            result = model(*call_args)
            tracer.phase = "done"
            outputs = [output_id(tracer, t, model) for t in flatten_outputs(result, tracer)]
    except (UserError, InternalError):
        raise
    except Exception as e:
        err = user_error_from(e, src, shown)
        if err is None:
            raise
        raise err from None
    measure_derived_moments(module, graph_inputs)
    measure_param_moments(module, init_args, params)
    nodes, outputs = prune(tracer.nodes, outputs)
    graph = {"format": FORMAT, "name": os.path.splitext(os.path.basename(src))[0], "source": src,
             "torch_version": torch.__version__, "mode": mode, "init_args": jsonable(init_args),
             "inputs": graph_inputs, "forward_args": forward_args, "params": params, "nodes": nodes,
             "outputs": outputs}
    validate(graph, schema)
    return graph


_MOMENTS_LIMIT = 1 << 26  # elements of get_inputs() in all: larger problems keep "unknown"


def measure_derived_moments(module, graph_inputs):
    """Floating inputs whose dist is unknown (computed in get_inputs(), e.g. (A + A.T) / 2 or triu(rand))
    get the measured mean and standard deviation of one real draw: the precision estimate
    (src/skills/tf32_error.cpp) reads them instead of assuming zero mean. get_inputs() runs again for
    real on the CPU, outside the tracer and with the caller's RNG state kept, only when it is small."""
    unknown = [g for g in graph_inputs if g["dist"].get("kind") == "unknown"
               and g["dtype"] in ("float32", "float16", "bfloat16", "float64") and "uninitialized" not in g["dist"].get("note", "")]
    if not unknown or sum(math.prod(g["shape"]) for g in graph_inputs) > _MOMENTS_LIMIT:
        return
    try:
        with preserved_rng(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            real = list(module.get_inputs())
    except Exception:
        return  # the moments are a refinement: without them the estimate stays conservative
    tensors = [x for x in real if isinstance(x, torch.Tensor)]  # graph_inputs: one per tensor, in order
    by_name = {g["name"]: x for g, x in zip(graph_inputs, tensors)}
    for g in unknown:
        m = moments_of(by_name.get(g["name"]), g["shape"])
        if m is not None:
            g["dist"] = dict(g["dist"], moments=m)


def moments_of(x, shape):
    """{"mean", "std"} of a real CPU float tensor of `shape` with finite values (6 significant digits), else None."""
    if x is None or list(x.shape) != shape or not x.dtype.is_floating_point or x.device.type != "cpu":
        return None
    x = x.detach().double()
    if x.numel() == 0 or not bool(torch.isfinite(x).all()):
        return None
    return {"mean": float(f"{x.mean().item():.6g}"), "std": float(f"{x.std(unbiased=False).item():.6g}")}


_PARAM_MOMENTS_LIMIT = 1 << 28  # parameter and buffer elements in all: larger models keep the default estimate


def measure_param_moments(module, init_args, params):
    """Each floating parameter and buffer gets the mean and standard deviation of the model's own initial
    values (`moments`): the precision estimate (src/skills/tf32_error.cpp) reads them instead of assuming
    torch's default init, which a custom init (torchvision's kaiming_normal_ with fan_out, BatchNorm's
    running statistics) does not follow. The model is built again for real on the CPU, outside the tracer
    and with the caller's RNG state kept, only when its parameters are small enough."""
    floating = [p for p in params if p["dtype"] in ("float32", "float16", "bfloat16", "float64")]
    if not floating or sum(math.prod(p["shape"]) for p in params) > _PARAM_MOMENTS_LIMIT:
        return
    if any(isinstance(a, torch.Tensor) for a in init_args):
        return  # built from tensors the tracer made on the meta device
    try:
        with preserved_rng(), warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            real = module.Model(*init_args)
            values = dict(real.named_parameters())
            values.update(real.named_buffers())
            values.update({p["path"]: operator.attrgetter(p["path"])(real) for p in params if p["kind"] == "attribute"})
    except Exception:
        return  # the moments are a refinement: without them the estimate keeps torch's default init
    for p in floating:
        m = moments_of(values.get(p["path"]), p["shape"])
        if m is not None:
            p["moments"] = m


def bind_inputs(tracer, model, inputs):
    """get_inputs() tensors become graph inputs named after forward's arguments; Python scalars stay
    constants (the graph is specialized to their values, which forward_args records)."""
    names = forward_arg_names(model, len(inputs))
    graph_inputs, call_args, forward_args, seen = [], [], [], set()
    for name, x in zip(names, inputs):
        if ops.is_num(x):
            call_args.append(x)
            forward_args.append({"name": name, "constant": x})
            continue
        if not isinstance(x, torch.Tensor):
            raise UserError(f"{tracer.shown}: get_inputs() returned a {type(x).__name__} for `{name}`; "
                            f"only tensors and Python numbers are supported")
        info = tracer.infos.get(id(x))
        dist = info[1] if info and info[0] is x else {"kind": "unknown", "note": "not made by a tensor factory"}
        if id(x) in seen:
            x = x.detach()
        seen.add(id(x))
        vid = name if not re.fullmatch(r"[pvt]\d+", name) else f"in_{name}"
        try:
            dt = dtype_name(x.dtype)
        except Unsupported as e:
            raise UserError(f"{tracer.shown}: input `{name}`: unsupported {e}")
        graph_inputs.append({"id": vid, "name": name, "shape": [int(s) for s in x.shape], "dtype": dt, "dist": dist})
        tracer.bind(x, vid)
        call_args.append(x)
        forward_args.append({"name": name, "input": vid})
    return graph_inputs, call_args, forward_args


def creation_order(tracer, items):
    """named_parameters() lists a module's own params before its children's; sort by when each was made."""
    items = list(items)
    last = len(tracer.created)
    return sorted(items, key=lambda pt: tracer.created.get(storage_key(pt[1]), (None, last))[1])


def bind_params(tracer, model):
    """Parameters then buffers, each in creation order, as p0, p1, ... (the plain tensor attributes forward
    reads follow, as it reads them: Tracer.attribute_param)."""
    for kind, items in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for path, t in creation_order(tracer, items):
            tracer.add_param(path, kind, t)
    return tracer.params


def flatten_outputs(result, tracer):
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (list, tuple)) and result:
        out = []
        for r in result:
            out.extend(flatten_outputs(r, tracer))
        return out
    raise UserError(f"{tracer.shown}: forward returned a {type(result).__name__}; expected a tensor or a "
                    f"tuple/list of tensors")


def output_id(tracer, t, model):
    """An output that is a graph input or parameter itself gets an identity node (outputs are node values)."""
    bad = tracer.poisoned.get(id(t))
    if bad is not None and bad[0] is t:  # why it could not be made comes first (torch.fft.rfft: no op)
        raise UserError(bad[1])
    if t.is_complex():
        raise UserError(f"{tracer.shown}: forward returns a complex tensor; kforge's outputs are real tensors: "
                        f"return torch.view_as_real(z) (and torch.view_as_complex it back where you need it)")
    vid = tracer.value_of(t)
    if vid.startswith("t"):
        return vid
    code = getattr(model.forward, "__code__", None)
    line = code.co_firstlineno if code is not None and code.co_filename == tracer.src else 0
    return tracer.new_node("identity", [vid], {}, t.detach(), f"{tracer.base}:{line}")


# ---------------------------------------------------------------- output

def dumps(graph):
    """JSON with one line per input, param and node (readable diffs)."""
    def one(v):
        return json.dumps(v, separators=(", ", ": "), allow_nan=False)
    lines = ["{"]
    keys = list(graph)
    for i, k in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        v = graph[k]
        if k in ("inputs", "params", "nodes") and v:
            lines.append(f'  "{k}": [')
            lines += [f"    {one(x)}{',' if j < len(v) - 1 else ''}" for j, x in enumerate(v)]
            lines.append(f"  ]{comma}")
        else:
            lines.append(f'  "{k}": {one(v)}{comma}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m kforge.importer", description=__doc__.splitlines()[0])
    p.add_argument("problem", nargs="?", help="KernelBench-format problem file (.py)")
    p.add_argument("-o", "--output", help="write the graph JSON here (default: stdout)")
    p.add_argument("--mode", choices=("eval", "train"), default="eval", help="module mode to trace in")
    p.add_argument("--list-ops", action="store_true", help="print the op names the importer can emit")
    p.add_argument("--ops-def", help="path to ops.def (default: $KFORGE_OPS_DEF or the repo's src/ir/ops.def)")
    args = p.parse_args(argv)
    if args.list_ops:
        print("\n".join(ops.emittable_ops()))
        return 0
    if not args.problem:
        p.error("a problem file is required (or --list-ops)")
    try:
        text = dumps(import_problem(args.problem, args.mode, args.ops_def))
        if args.output:
            try:
                with open(args.output, "w") as f:
                    f.write(text)
            except OSError as e:
                raise UserError(f"cannot write {args.output}: {e.strerror}")
        else:
            sys.stdout.write(text)
    except UserError as e:
        print(f"kforge import: error: {e}", file=sys.stderr)
        return 2
    except InternalError as e:
        print(f"kforge import: internal error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
