# ATen capture: a C++ torch callable without an importer rule, traced by make_fx and recorded op by op.
"""How a C++ composite (torch.lstm / gru / rnn_tanh / rnn_relu, F.unfold's im2col, torch.meshgrid, ...) becomes
graph nodes.

import_ops.py has a rule per torch callable the importer knows. A C++ callable without one is captured with
PyTorch's own machinery: `make_fx` traces the call on the same meta tensors, with torch._decomp decompositions
(`core_aten_decompositions()` on torch 2.x; on 1.13, which lacks it, the aten-to-aten entries of
`torch._decomp.decomposition_table`), less the ops TABLE translates itself. The FX graph of ATen ops is then run
again node by node on meta tensors, and each ATen op becomes kforge nodes through TABLE (ATen op name -> emitter
returning Emit / Alias plans, as import_ops' normalizers do). An in-place ATen op (`add_`, `sigmoid_`, `copy_`)
is recorded as its out-of-place form; the tracer rebinds the updated tensor and makes every overlapping alias an
error to use. An ATen op that TABLE lacks makes its results errors to use, naming the op and the user's line.
"""
import math
import operator
import re

import torch
import torch.nn.functional as F

from .import_ops import (GRID_SAMPLE_MODES, GRID_SAMPLE_PADDINGS, METADATA_INPLACE, Alias, Const, Emit, Unsupported,
                         UserError, _clamp_plan, _dtype_cast, _logical, _permute, _scaled, _Steps, binary, dim, dims,
                         _advanced_index_plan, _indexed_write_plan, finite, grid_sample_plan, is_num,
                         max_pool_indices_plan, norm_plan, shape, tup, write_plan, DiagonalView, diagonal_write_plan,
                         scatter_plan)


class CaptureFailed(Exception):
    """make_fx could not trace the call (no meta kernel, data-dependent shapes, ...); the message says why."""


TABLE = {}  # ATen op name (the overload packet: "add", "native_layer_norm") -> emitter(a) -> plan


def aten_rule(names):
    def deco(fn):
        for n in names.split():
            TABLE[n] = fn
        return fn
    return deco


def op_name(op):
    packet = getattr(op, "overloadpacket", None)
    return getattr(packet, "__name__", None) or str(op)


def functional_name(name):
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


class AtenArgs:
    """An ATen call's arguments by schema name (a.self, a.other, a.alpha, ...), its meta result `out`, `meta`
    (runs torch untraced, for intermediate shapes) and `ctx` (state shared over one captured graph)."""

    def __init__(self, op, args, kwargs, out, meta, ctx):
        for i, arg in enumerate(op._schema.arguments):
            if i < len(args) and not arg.kwarg_only:
                v = args[i]
            elif arg.name in kwargs:
                v = kwargs[arg.name]
            elif arg.has_default_value():
                v = arg.default_value
            else:
                v = None
            self.__dict__[arg.name] = v
        self.aten_name = op_name(op)
        self.overload = getattr(op, "_overloadname", "default")
        self.out, self.meta, self.ctx = out, meta, ctx


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    return []


# ---------------------------------------------------------------- decompositions

_DECOMPOSITIONS = None


def decompositions():
    """torch 2.x: the core ATen table; 1.13 has none, so its aten-level decompositions (its table also sends ops
    to prims through torch._refs, which kforge does not read). Ops TABLE translates are left whole."""
    global _DECOMPOSITIONS
    if _DECOMPOSITIONS is None:
        import torch._decomp as decomp
        if hasattr(decomp, "core_aten_decompositions"):
            table = dict(decomp.core_aten_decompositions())
        else:
            table = {op: fn for op, fn in decomp.decomposition_table.items()
                     if getattr(fn, "__module__", "").startswith("torch._decomp")}
        _DECOMPOSITIONS = {op: fn for op, fn in table.items() if functional_name(op_name(op)) not in TABLE}
    return _DECOMPOSITIONS


# ---------------------------------------------------------------- capture and replay

def capture(tracer, func, shown, args, kwargs, out):
    """Record func(*args, **kwargs) (already run on meta tensors, giving `out`) as kforge nodes; returns the
    call's result rebuilt from the replayed tensors (so in-place results are the caller's own tensors)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils import _pytree as pytree

    from . import recurrent
    kept = recurrent.keep_whole(tracer, func, args, kwargs, out)  # nn.LSTM / GRU / RNN as one `rnn` node
    if kept is not None:
        return kept
    flat, spec = pytree.tree_flatten((list(args), dict(kwargs)))
    slots = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor)]

    def call(*ts):
        vals = list(flat)
        for i, t in zip(slots, ts):
            vals[i] = t
        a, k = pytree.tree_unflatten(vals, spec)
        return func(*a, **k)

    try:
        gm = tracer.run(make_fx(call, decomposition_table=decompositions()), *[flat[i] for i in slots])
    except Exception as e:
        raise CaptureFailed(f"{tracer.where()}: unsupported torch callable {shown} (capturing its ATen ops failed: "
                            f"{type(e).__name__}: {_first_line(e)})")
    results = _tensors(replay(tracer, gm, [flat[i] for i in slots], shown))
    expected = _tensors(out)
    if len(results) != len(expected):
        raise CaptureFailed(f"{tracer.where()}: unsupported torch callable {shown} (its ATen graph returns "
                            f"{len(results)} tensors, the call {len(expected)})")
    return _rebuild(out, iter(results))


def _rebuild(obj, results):
    if isinstance(obj, torch.Tensor):
        return next(results)
    if isinstance(obj, (list, tuple)):
        items = [_rebuild(o, results) for o in obj]
        if hasattr(obj, "_fields"):  # namedtuple
            return type(obj)(*items)
        return type(obj)(items)
    return obj


def _first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def replay(tracer, gm, inputs, shown):
    """Run the captured graph on meta tensors, recording each ATen op; placeholders are the caller's tensors."""
    env, ctx = {}, {"transposed": {}}
    loc = tracer.loc()
    feed = iter(inputs)
    fetch = lambda n: env[n]  # noqa: E731
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = next(feed)
        elif node.op == "get_attr":
            env[node] = _constant(tracer, getattr(gm, node.target), shown, loc)
        elif node.op == "call_function":
            args = torch.fx.node.map_arg(node.args, fetch)
            kwargs = torch.fx.node.map_arg(node.kwargs, fetch)
            if node.target is operator.getitem:
                env[node] = args[0][args[1]]
            else:
                env[node] = translate(tracer, node.target, args, kwargs, shown, loc, ctx)
        elif node.op == "output":
            return torch.fx.node.map_arg(node.args[0], fetch)
    raise CaptureFailed(f"{tracer.where()}: {shown}: the captured graph has no output")


def _constant(tracer, value, shown, loc):
    """A tensor constant of the ATen graph: a `full` node when all its elements are one known number."""
    m = tracer.run(torch.empty, shape(value), dtype=value.dtype, device="meta")
    if value.device.type != "meta" and value.numel() > 0:
        first = value.reshape(-1)[0]
        if bool((value == first).all()):
            tracer.new_node("full", [], {"shape": shape(value), "value": finite(first.item(), "value"),
                                         "dtype": value.dtype}, m, loc)
            return m
    tracer.poison(m, f"{tracer.where()}: {shown} decomposes to ATen ops that use a constant tensor, "
                     f"which kforge cannot hold")
    return m


def translate(tracer, op, args, kwargs, shown, loc, ctx):
    """One ATen op on meta tensors -> kforge nodes; what cannot be expressed is poisoned, not raised."""
    name = op_name(op)
    try:
        out = tracer.run(op, *args, **kwargs)
    except Exception as e:
        raise CaptureFailed(f"{tracer.where()}: {shown}: aten.{name} fails on meta tensors "
                            f"({type(e).__name__}: {_first_line(e)})")
    written = []
    for i, arg in enumerate(op._schema.arguments):
        info = arg.alias_info
        if info is not None and info.is_write:
            v = args[i] if i < len(args) and not arg.kwarg_only else kwargs.get(arg.name)
            written += _tensors(v)
    results = _tensors(out)
    for t in _tensors(list(args) + list(kwargs.values())):  # blame the first unsupported call
        bad = tracer.poisoned.get(id(t))
        if bad is not None and bad[0] is t:
            _poison(tracer, results + written, bad[1], written)
            return out
    emitter = TABLE.get(name) or TABLE.get(functional_name(name))
    if emitter is None:
        _poison(tracer, results + written, f"{tracer.where()}: {shown} decomposes to aten.{name}, which kforge has "
                                           f"no op for", written)
        return out
    a = AtenArgs(op, args, kwargs, out, tracer.run, ctx)
    try:
        plan = emitter(a)
        steps = plan if isinstance(plan, list) else [plan]
        tracer.materialize(steps, out, loc, f"{shown} (aten.{name})")
    except Unsupported as e:
        _poison(tracer, results + written, f"{tracer.where()}: {shown} decomposes to aten.{name} with {e}, which "
                                           f"kforge cannot express", written)
        return out
    except UserError as e:
        _poison(tracer, results + written, str(e), written)
        return out
    targets = [s.out if s.out is not None else out for s in steps]
    done = lambda t: any(t is x for x in targets)  # noqa: E731
    for t in written:
        if not done(t):
            _poison(tracer, [t], f"{tracer.where()}: {shown} decomposes to aten.{name}, which updates a tensor in "
                                 f"place in a way kforge does not follow", [t])
        elif name not in METADATA_INPLACE:
            tracer.mutated(t, shown, loc)
    for i, t in enumerate(results):
        if not done(t):
            tracer.poison(t, f"{tracer.where()}: {shown} decomposes to aten.{name}, whose output {i} kforge has no "
                             f"op for")
    return out


def _poison(tracer, tensors, msg, written=()):
    """Make `tensors` errors to use; for `written` (tensors an op updates in place that kforge cannot follow), also
    every tensor sharing their memory: the base a view was taken from (the caller's tensor) would silently keep
    its old value otherwise."""
    for t in tensors:
        tracer.poison(t, msg)
    for t in written:
        tracer.poison_overlapping(t, [t], msg)


# ---------------------------------------------------------------- the table: elementwise

_UNARY = ("relu sigmoid tanh exp log abs neg sqrt rsqrt reciprocal erf sign silu mish hardsigmoid hardswish "
          "sin cos tan asin acos atan sinh cosh asinh acosh atanh log1p expm1 log2 log10 exp2 erfc erfinv lgamma "
          "floor ceil trunc frac isnan isinf isposinf isneginf")
for _op in _UNARY.split():
    aten_rule(_op)(lambda a, _op=_op: Emit(_op, [a.self], {}))


# Special functions: aten's names (torch.special.i0e is aten.special_i0e) -> kforge's unary ops.
for _aten, _op in (("digamma", "digamma"), ("special_digamma", "digamma"), ("special_psi", "digamma"), ("i0", "i0"),
                   ("special_i0", "i0"), ("special_i0e", "i0e"), ("special_i1", "i1"), ("special_i1e", "i1e"),
                   ("special_erfcx", "erfcx"), ("special_ndtri", "ndtri")):
    aten_rule(_aten)(lambda a, _op=_op: Emit(_op, [a.self], {}))


@aten_rule("polygamma special_polygamma")
def polygamma(a):
    """torch.polygamma(n, x): the n-th derivative of digamma (n >= 0)."""
    n = int(a.n)
    if n < 0:
        raise Unsupported(f"polygamma of order {n} (torch takes n >= 0)")
    return Emit("polygamma", [a.self], {"n": n})


@aten_rule("special_zeta")
def zeta(a):
    """torch.special.zeta(x, q): the Hurwitz zeta function; either side may be a number."""
    return binary("zeta", a.self, a.other)


@aten_rule("round")
def round_(a):
    if getattr(a, "decimals", 0):
        raise Unsupported(f"decimals={a.decimals}")
    return Emit("round", [a.self], {})


@aten_rule("atan2 arctan2 hypot")
def atan2_hypot(a):
    return binary("hypot" if a.aten_name == "hypot" else "atan2", a.self, a.other)


@aten_rule("gelu")
def gelu(a):
    return Emit("gelu", [a.self], {"approximate": a.approximate})


@aten_rule("leaky_relu")
def leaky_relu(a):
    return Emit("leaky_relu", [a.self], {"negative_slope": a.negative_slope})


@aten_rule("hardtanh")
def hardtanh(a):
    return Emit("hardtanh", [a.self], {"min_val": a.min_val, "max_val": a.max_val})


@aten_rule("softplus")
def softplus(a):
    return Emit("softplus", [a.self], {"beta": a.beta, "threshold": a.threshold})


_SELU = (1.6732632423543772, 1.0507009873554805)


@aten_rule("elu")
def elu(a):
    if a.input_scale != 1:
        raise Unsupported(f"input_scale={a.input_scale}")
    if abs(a.alpha - _SELU[0]) < 1e-12 and abs(a.scale - _SELU[1]) < 1e-12:
        return Emit("selu", [a.self], {})
    if a.scale != 1:
        raise Unsupported(f"scale={a.scale}")
    return Emit("elu", [a.self], {"alpha": a.alpha})


@aten_rule("clamp clip")
def clamp(a):
    return _clamp_plan(a.self, a.min, a.max, a)


@aten_rule("clamp_min")
def clamp_min(a):
    return _clamp_plan(a.self, a.min, None, a)


@aten_rule("clamp_max")
def clamp_max(a):
    return _clamp_plan(a.self, None, a.max, a)


def _add_sub(op, reverse=False):
    def emit(a):
        if reverse:  # rsub: other - alpha * self
            steps, x = _scaled(a, a.self, a.alpha)
            return steps + [binary(op, x, a.other, reverse=True)]
        steps, other = _scaled(a, a.other, a.alpha)
        return steps + [binary(op, a.self, other)]
    return emit


aten_rule("add")(_add_sub("add"))
aten_rule("sub")(_add_sub("sub"))
aten_rule("rsub")(_add_sub("sub", reverse=True))
for _op in "mul maximum minimum eq ne lt le gt ge".split():
    aten_rule(_op)(lambda a, _op=_op: binary(_op, a.self, a.other))


@aten_rule("div")
def div(a):
    mode = getattr(a, "rounding_mode", None)
    if mode is not None:
        if mode not in _ROUNDED:
            raise Unsupported(f"rounding_mode={mode!r}")
        return binary(_ROUNDED[mode], a.self, a.other)
    return binary("div", a.self, a.other)


@aten_rule("pow")
def pow_(a):
    if isinstance(a.self, torch.Tensor) and is_num(a.exponent):
        return Emit("pow_scalar", [a.self], {"exponent": finite(a.exponent, "exponent")})
    return binary("pow", a.self, a.exponent)


@aten_rule("where")
def where(a):
    const = lambda v: Const(v, a.out.dtype) if is_num(v) else v  # noqa: E731
    return Emit("where", [a.condition, const(a.self), const(a.other)], {})


@aten_rule("masked_fill")
def masked_fill(a):
    return Emit("where", [a.mask, Const(a.value, a.out.dtype) if is_num(a.value) else a.value, a.self], {})


@aten_rule("logical_not")
def logical_not(a):
    return _logical("logical_not", a, a.self)


@aten_rule("logical_and logical_or")
def logical_binary(a):
    return _logical(f"logical_{'and' if 'and' in a.aten_name else 'or'}", a, a.self, a.other)


def _bitwise(op, logical, a, *xs):
    """As import_ops._bitwise: bool tensors take the logical ops, integers the bit operations."""
    tensors = [x for x in xs if isinstance(x, torch.Tensor)]
    if any(x.dtype.is_floating_point for x in tensors):
        raise Unsupported("a bitwise operation on a float tensor")
    if all(x.dtype == torch.bool for x in tensors) and logical is not None:
        return _logical(logical, a, *xs)
    return Emit(op, [Const(x, a.out.dtype) if is_num(x) else x for x in xs], {})


@aten_rule("bitwise_not")
def bitwise_not(a):
    return _bitwise("bitwise_not", "logical_not", a, a.self)


@aten_rule("bitwise_and bitwise_or bitwise_xor")
def bitwise_binary(a):
    op = functional_name(a.aten_name)
    return _bitwise(op, {"bitwise_and": "logical_and", "bitwise_or": "logical_or"}.get(op), a, a.self, a.other)


_ROUNDED = {"floor": "floor_divide", "trunc": "trunc_divide"}


@aten_rule("floor_divide remainder fmod")
def rounded_division(a):
    return binary(functional_name(a.aten_name), a.self, a.other)


@aten_rule("glu")
def glu(a):
    x = a.self
    d = dim(a.dim, x.dim())
    half = int(x.shape[d]) // 2
    first = a.meta(x.narrow, d, 0, half)
    second = a.meta(x.narrow, d, half, half)
    gate = a.meta(torch.sigmoid, second)
    return [Emit("slice", [x], {"dim": d, "start": 0, "end": half, "step": 1}, first),
            Emit("slice", [x], {"dim": d, "start": half, "end": 2 * half, "step": 1}, second),
            Emit("sigmoid", [second], {}, gate), Emit("mul", [first, gate], {})]


@aten_rule("threshold")
def threshold(a):
    b = _Steps(a)
    keep = b.scalar("gt", a.self, a.threshold)
    return b.steps + [Emit("where", [keep, a.self, Const(a.value, a.out.dtype)], {})]


@aten_rule("hardshrink")
def hardshrink(a):
    b = _Steps(a)
    keep = b.scalar("gt", b("abs", [a.self], {}, torch.abs, a.self), a.lambd)
    return b.steps + [Emit("where", [keep, a.self, Const(0, a.out.dtype)], {})]


@aten_rule("softshrink")
def softshrink(a):
    x, lam, b = a.self, a.lambd, _Steps(a)
    above, below = b.scalar("gt", x, lam), b.scalar("lt", x, -lam)
    down = b.scalar("sub", x, lam)
    up = b.scalar("add", x, lam)
    low = b("where", [below, up, Const(0, x.dtype)], {}, torch.where, below, up, torch.zeros((), dtype=x.dtype,
                                                                                              device="meta"))
    return b.steps + [Emit("where", [above, down, low], {})]


@aten_rule("celu")
def celu(a):
    """celu(x, alpha) = alpha * elu(x / alpha)."""
    x, alpha, b = a.self, float(a.alpha), _Steps(a)
    y = b.scalar("mul", x, 1.0 / alpha)
    e = b("elu", [y], {"alpha": 1.0}, F.elu, y)
    return b.steps + [Emit("mul", [e, None], {"scalar": alpha, "reverse": False})]


@aten_rule("log_sigmoid_forward log_sigmoid")
def log_sigmoid(a):
    """log(sigmoid(x)) = -softplus(-x)."""
    x, b = a.self, _Steps(a)
    n = b("neg", [x], {}, torch.neg, x)
    sp = b("softplus", [n], {"beta": 1.0, "threshold": 20.0}, F.softplus, n)
    return b.steps + [Emit("neg", [sp], {}, a.out[0] if isinstance(a.out, (list, tuple)) else None)]


@aten_rule("lerp")
def lerp(a):
    """self + weight * (end - self)."""
    x, b = a.self, _Steps(a)
    d = b("sub", [a.end, x], {}, torch.sub, a.end, x)
    if is_num(a.weight):
        wd = b.scalar("mul", d, a.weight)
    else:
        wd = b("mul", [a.weight, d], {}, torch.mul, a.weight, d)
    return b.steps + [Emit("add", [x, wd], {})]


@aten_rule("prelu _prelu_kernel")
def prelu(a):
    x, w, b = a.self, a.weight, _Steps(a)
    if a.aten_name == "prelu" and w.numel() > 1 and x.dim() > 2:
        w = b("reshape", [w], {"shape": [w.numel()] + [1] * (x.dim() - 2)}, w.reshape,
              [w.numel()] + [1] * (x.dim() - 2))
    pos = b.scalar("gt", x, 0)
    scaled = b("mul", [w, x], {}, torch.mul, w, x)
    return b.steps + [Emit("where", [pos, x, scaled], {})]


# ---------------------------------------------------------------- reductions, softmax, scans

def _reduce(op):
    def emit(a):
        steps, x = _dtype_cast(a, a.self, getattr(a, "dtype", None))
        return steps + [Emit(op, [x], {"dims": dims(getattr(a, "dim", None), x.dim()),
                                       "keepdim": bool(getattr(a, "keepdim", False))})]
    return emit


for _op in "sum mean amax amin logsumexp".split():
    aten_rule(_op)(_reduce(_op))


@aten_rule("prod")
def prod(a):
    return _reduce("prod")(a)


def _correction(a):
    corr = getattr(a, "correction", None)
    if corr is not None:
        return int(corr)
    return 0 if getattr(a, "unbiased", True) is False else 1


@aten_rule("var")
def var(a):
    return Emit("var", [a.self], {"dims": dims(getattr(a, "dim", None), a.self.dim()),
                                  "keepdim": bool(getattr(a, "keepdim", False)), "correction": _correction(a)})


@aten_rule("var_mean std_mean")
def var_mean(a):
    """(var or std, mean) over the same dims: the two reductions kforge has."""
    attrs = {"dims": dims(getattr(a, "dim", None), a.self.dim()), "keepdim": bool(getattr(a, "keepdim", False))}
    spread, mean = a.out
    steps = [Emit("mean", [a.self], attrs, mean)]
    if a.aten_name == "var_mean":
        return steps + [Emit("var", [a.self], dict(attrs, correction=_correction(a)), spread)]
    v = a.meta(torch.empty, shape(spread), dtype=spread.dtype, device="meta")
    return steps + [Emit("var", [a.self], dict(attrs, correction=_correction(a)), v), Emit("sqrt", [v], {}, spread)]


@aten_rule("aminmax")
def aminmax(a):
    d = getattr(a, "dim", None)
    attrs = {"dims": [] if d is None else [dim(d, a.self.dim())], "keepdim": bool(getattr(a, "keepdim", False))}
    lo, hi = a.out
    return [Emit("amin", [a.self], attrs, lo), Emit("amax", [a.self], attrs, hi)]


@aten_rule("median kthvalue")
def order_statistic(a):
    """The k-th smallest along a dim (median: the lower middle, (n - 1) // 2, as torch's) from a stable sort:
    values and indices select position k - 1 of the sorted values and of the argsort."""
    if not hasattr(a, "dim"):  # torch.median(x): the lower middle of every element
        b = _Steps(a)
        flat = b("reshape", [a.self], {"shape": [-1]}, torch.reshape, a.self, [-1])
        n = flat.shape[0]
        srt = b("sort", [flat], {"dim": 0, "descending": False}, lambda t: torch.sort(t, 0).values, flat)
        b("select", [srt], {"dim": 0, "index": (n - 1) // 2}, torch.select, srt, 0, (n - 1) // 2)
        return b.done(a.out)
    d = dim(a.dim, a.self.dim())
    n = int(a.self.shape[d]) if a.self.dim() else 1
    k = (n - 1) // 2 if a.aten_name == "median" else int(a.k) - 1
    if not 0 <= k < n:
        raise Unsupported(f"k={k + 1} out of range for a dim of {n}")
    values, indices = a.out
    attrs = {"dim": d, "descending": False}
    sv = a.meta(lambda t: torch.sort(t, dim=d, stable=True).values, a.self)
    si = a.meta(lambda t: torch.sort(t, dim=d, stable=True).indices, a.self)
    steps = [Emit("sort", [a.self], attrs, sv), Emit("argsort", [a.self], attrs, si)]
    for src, out in ((sv, values), (si, indices)):
        picked = a.meta(torch.select, src, d, k)
        if getattr(a, "keepdim", False):
            steps += [Emit("select", [src], {"dim": d, "index": k}, picked),
                      Emit("reshape", [picked], {"shape": shape(out)}, out)]
        else:
            steps.append(Emit("select", [src], {"dim": d, "index": k}, out))
    return steps


@aten_rule("any all")
def any_all(a):
    """torch.any / torch.all over some dims or all (and what torch decomposes to them: isin, all, quantile's NaN
    check): the nonzero (any) or zero (all) elements counted in int64, a sum, so that an empty reduction counts 0
    (any False, all True, as torch's), then compared with 0. NaN is nonzero."""
    x, b = a.self, _Steps(a)
    d = getattr(a, "dim", None)
    attrs = {"dims": dims(d, x.dim()), "keepdim": bool(getattr(a, "keepdim", False))}
    test = "ne" if a.aten_name == "any" else "eq"
    hit = b.scalar(test, x, 0)
    n = b("cast", [hit], {"dtype": torch.int64}, lambda t: t.to(torch.int64), hit)
    count = b("sum", [n], attrs, lambda t: torch.sum(t, dim=attrs["dims"] or None, keepdim=attrs["keepdim"]), n)
    b.scalar("gt" if a.aten_name == "any" else "eq", count, 0)
    return b.done(a.out)


def _count_below(b, seq, values, right):
    """For each value, how many of the sorted `seq`'s last-dim entries lie below it (<= it when `right`): the
    index torch's binary search returns, as a broadcast compare of every value with every entry and a sum.
    seq (..., K) pairs with values (..., M) on its leading dims (or is 1-D for any values); NaN values count
    all K entries (torch sorts NaN last)."""
    k = int(seq.shape[-1])
    vs = shape(values) + [1]
    v = b("reshape", [values], {"shape": vs}, torch.reshape, values, vs)
    ss = shape(seq)[:-1] + [1, k]  # a batched sequence meets its rows' values: (..., 1, K) against (..., M, 1)
    sq = b("reshape", [seq], {"shape": ss}, torch.reshape, seq, ss) if seq.dim() > 1 else seq
    below = b("ge" if right else "gt", [v, sq], {}, torch.ge if right else torch.gt, v, sq)
    n = b("cast", [below], {"dtype": torch.int64}, lambda t: t.to(torch.int64), below)
    count = b("sum", [n], {"dims": [n.dim() - 1], "keepdim": False}, lambda t: torch.sum(t, dim=-1), n)
    if not values.dtype.is_floating_point:
        return count
    nan = b("isnan", [values], {}, torch.isnan, values)
    return b("where", [nan, Const(k, torch.int64), count], {}, lambda m, c: torch.where(m, k, c), nan, count)


@aten_rule("bucketize searchsorted")
def bucketize(a):
    """torch.bucketize(x, boundaries) and torch.searchsorted(sorted_sequence, x): the insertion index of each
    value among sorted entries (left: the first entry >= it; right: the first > it), as _count_below."""
    if a.aten_name == "bucketize":
        seq, values, right = a.boundaries, a.self, bool(getattr(a, "right", False))
    else:
        if getattr(a, "sorter", None) is not None:
            raise Unsupported("searchsorted with a sorter")
        seq, values = a.sorted_sequence, a.self
        right = bool(getattr(a, "right", False)) or getattr(a, "side", None) == "right"
    if not isinstance(values, torch.Tensor) or not isinstance(seq, torch.Tensor):
        raise Unsupported("a scalar value or sequence")
    if seq.dim() > 1 and shape(seq)[:-1] != shape(values)[:-1]:
        raise Unsupported("a sorted sequence whose leading dims differ from the values'")
    b = _Steps(a)
    _count_below(b, seq, values, right)
    if getattr(a, "out_int32", False):
        last = b.steps[-1].out
        b("cast", [last], {"dtype": torch.int32}, lambda t: t.to(torch.int32), last)
    return b.done(a.out)


@aten_rule("histc")
def histc(a):
    """torch.histc(x, bins, min, max): counts of x's elements in `bins` equal bins over [min, max], as torch's
    kernels bin them: bin = int((x - min) * bins / (max - min)) in x's precision, the last edge counted in the
    last bin, elements outside the range (and NaN) left out; min == max takes the data's own min and max (widened
    by 1 each way when they too are equal). Then a scatter_add of ones (integer counts: exact in float up to
    2**24 per bin)."""
    x, bins, b = a.self, int(a.bins), _Steps(a)
    if not x.dtype.is_floating_point:
        raise Unsupported(f"histc of a {x.dtype} tensor (torch bins floating-point tensors)")
    if bins <= 0 or x.numel() == 0:
        raise Unsupported(f"histc with {bins} bins of {x.numel()} elements")
    dt = x.dtype
    flat = b("reshape", [x], {"shape": [-1]}, torch.reshape, x, [-1])
    lo_v = torch.tensor(float(getattr(a, "min", 0)), dtype=dt)
    hi_v = torch.tensor(float(getattr(a, "max", 0)), dtype=dt)
    if bool(lo_v == hi_v):  # the data's range (0-d values in the graph)
        attrs = {"dims": [0], "keepdim": False}
        lo = b("amin", [flat], attrs, lambda t: torch.amin(t, 0), flat)
        hi = b("amax", [flat], attrs, lambda t: torch.amax(t, 0), flat)
        same = b("eq", [lo, hi], {}, torch.eq, lo, hi)
        lo_w = b.scalar("sub", lo, 1)
        hi_w = b.scalar("add", hi, 1)
        lo = b("where", [same, lo_w, lo], {}, torch.where, same, lo_w, lo)
        hi = b("where", [same, hi_w, hi], {}, torch.where, same, hi_w, hi)
        width = b("sub", [hi, lo], {}, torch.sub, hi, lo)
    else:  # constants rounded to x's precision, the width too, as the kernels compute them
        lo, hi = Const(float(lo_v), dt), Const(float(hi_v), dt)
        width = Const(float(hi_v - lo_v), dt)
    t = lambda v: v if isinstance(v, torch.Tensor) else v.value  # noqa: E731  (a meta value or the constant)
    shifted = b("sub", [flat, lo], {}, lambda u, v: u - v, flat, t(lo))
    scaled = b.scalar("mul", shifted, bins)
    pos = b("div", [scaled, width], {}, lambda u, v: u / v, scaled, t(width))
    idx = b("cast", [pos], {"dtype": torch.int64}, lambda u: u.to(torch.int64), pos)
    at_end = b.scalar("eq", idx, bins)
    idx = b("where", [at_end, Const(bins - 1, torch.int64), idx], {}, lambda m, u: torch.where(m, bins - 1, u),
            at_end, idx)
    above = b("ge", [flat, lo], {}, lambda u, v: u >= v, flat, t(lo))
    below = b("le", [flat, hi], {}, lambda u, v: u <= v, flat, t(hi))
    inside = b("logical_and", [above, below], {}, torch.logical_and, above, below)
    idx = b("where", [inside, idx, Const(0, torch.int64)], {}, lambda m, u: torch.where(m, u, 0), inside, idx)
    ones = b("cast", [inside], {"dtype": dt}, lambda u: u.to(dt), inside)
    zeros = b("full", [], {"shape": [bins], "value": 0, "dtype": dt}, torch.zeros, bins, dtype=dt, device="meta")
    b("scatter_add", [zeros, idx, ones], {"dim": 0}, torch.scatter_add, zeros, 0, idx, ones)
    return b.done(a.out)


def _negative(b, y):
    """Where y's sign is negative: y < 0, and for floats also -0.0 (its reciprocal is -inf; for y != 0 the
    reciprocal has y's sign). A NaN's sign bit is not read: it counts as positive."""
    neg = b.scalar("lt", y, 0)
    if not y.dtype.is_floating_point:
        return neg
    neg_zero = b.scalar("lt", b("reciprocal", [y], {}, torch.reciprocal, y), 0)
    return b("logical_or", [neg, neg_zero], {}, torch.logical_or, neg, neg_zero)


@aten_rule("copysign")
def copysign(a):
    """torch.copysign(x, y): |x| with the sign of y, -0.0 included (1 / -0.0 is -inf); a NaN y counts as positive
    (its sign bit is not read: NaN's sign is not something torch's ops set on purpose)."""
    x, y, b = a.self, a.other, _Steps(a)
    if not isinstance(y, torch.Tensor):
        y = Const(float(y), a.out.dtype)
    if x.dtype != a.out.dtype:  # an integer x is promoted, as torch does
        x = b("cast", [x], {"dtype": a.out.dtype}, lambda u: u.to(a.out.dtype), x)
    mag = b("abs", [x], {}, torch.abs, x)
    if isinstance(y, Const):
        if math.copysign(1.0, y.value) < 0:
            b("neg", [mag], {}, torch.neg, mag)
        else:
            b("identity", [mag], {}, lambda u: u.clone(), mag)
        return b.done(a.out)
    flip = _negative(b, y)
    minus = b("neg", [mag], {}, torch.neg, mag)
    b("where", [flip, minus, mag], {}, torch.where, flip, minus, mag)
    return b.done(a.out)


def _triangle_coords(b, row, col, offset, lower):
    """Row and column (int64, K each) of the kept entries of a row x col matrix in row-major order (tril: column -
    row <= offset; triu: >= offset), made from ops: every position p (a cumulative sum of ones), its row p // col
    and column p % col, kept by a compare; each kept position goes to slot (running count of kept - 1) by a
    scatter, the others to a spare slot K that is sliced off."""
    i64, n = torch.int64, row * col
    k = sum(1 for r in range(row) for c in range(col) if ((c - r <= offset) if lower else (c - r >= offset)))
    if k == 0:
        raise Unsupported(f"an empty triangle ({row} x {col}, offset {offset})")
    pos = b.scalar("sub", b.counting(n, i64), 1)
    r = b.scalar("floor_divide", pos, col)
    c = b.scalar("remainder", pos, col)
    diag = b("sub", [c, r], {}, torch.sub, c, r)
    keep = b.scalar("le" if lower else "ge", diag, offset)
    kept = b("cast", [keep], {"dtype": i64}, lambda t: t.to(i64), keep)
    slot = b.scalar("sub", b("cumsum", [kept], {"dim": 0}, torch.cumsum, kept, 0), 1)
    slot = b("where", [keep, slot, Const(k, i64)], {}, lambda m, t: torch.where(m, t, k), keep, slot)
    coords = []
    for coord in (r, c):
        spare = b("full", [], {"shape": [k + 1], "value": 0, "dtype": i64}, torch.zeros, k + 1, dtype=i64,
                  device="meta")
        put = b("scatter", [spare, slot, coord], {"dim": 0}, torch.scatter, spare, 0, slot, coord)
        coords.append(b("slice", [put], {"dim": 0, "start": 0, "end": k, "step": 1}, lambda t: t[:k], put))
    return coords


@aten_rule("tril_indices triu_indices")
def tril_triu_indices(a):
    """torch.tril_indices / triu_indices(row, col, offset): the (2, K) coordinates of _triangle_coords (DLRM's
    pairwise feature interactions pick them)."""
    row, col, offset = int(a.row), int(a.col), int(getattr(a, "offset", 0))
    dt, b = a.out.dtype, _Steps(a)
    if row * col == 0:
        raise Unsupported(f"an empty result ({row} x {col}, offset {offset})")
    rows = _triangle_coords(b, row, col, offset, a.aten_name == "tril_indices")
    out = b("stack", rows, {"dim": 0}, lambda u, v: torch.stack([u, v]), *rows)
    if dt != torch.int64:
        b("cast", [out], {"dtype": dt}, lambda t: t.to(dt), out)
    return b.done(a.out)


@aten_rule("_pdist_forward")
def pdist(a):
    """F.pdist(x (N, M), p): the p-norm distances of every pair i < j in row-major order: cdist's broadcast
    differences and norm over the features (N x N), then the strict upper triangle's entries (_triangle_coords)
    read by one index_select of row * N + column."""
    x, p = a.self, float(a.p)
    if x.dim() != 2 or p != p or p < 0:
        raise Unsupported(f"pdist of a {x.dim()}-d input with p={p}")
    n, b = int(x.shape[0]), _Steps(a)
    if n < 2:
        raise Unsupported(f"pdist of {n} row(s)")
    u1 = b("reshape", [x], {"shape": [n, 1, -1]}, torch.reshape, x, [n, 1, -1])
    u2 = b("reshape", [x], {"shape": [1, n, -1]}, torch.reshape, x, [1, n, -1])
    d = b("sub", [u1, u2], {}, torch.sub, u1, u2)
    dist = b("norm", [d], {"dims": [2], "keepdim": False, "p": finite(p, "p")}, torch.linalg.vector_norm, d, p, -1)
    flat = b("reshape", [dist], {"shape": [n * n]}, torch.reshape, dist, [n * n])
    r, c = _triangle_coords(b, n, n, 1, lower=False)
    rn = b.scalar("mul", r, n)
    lin = b("add", [rn, c], {}, torch.add, rn, c)
    b("index_select", [flat, lin], {"dim": 0}, torch.index_select, flat, 0, lin)
    return b.done(a.out)


def _index_items(indices):
    """ATen's index list (None for a dim taken whole) as a Python index tuple."""
    return tuple(slice(None) if i is None else i for i in indices)


@aten_rule("index")
def index(a):
    """aten.index (x[tensors] inside a captured C++ callable or a decomposition): the importer's read plan."""
    return _advanced_index_plan(a, a.self, _index_items(a.indices))


@aten_rule("index_put")
def index_put(a):
    """aten.index_put (x[tensors] = v, accumulate adds duplicates up): the importer's write plan."""
    return _indexed_write_plan(a.self, _index_items(a.indices), a.values, a.meta, None,
                               accumulate=bool(getattr(a, "accumulate", False)))


@aten_rule("index_add index_copy index_fill")
def index_along_dim(a):
    """Tensor.index_add / index_copy / index_fill along one dim: an index_put with the index at that dim
    (index_add accumulates source * alpha; index_fill writes a number)."""
    d = dim(a.dim, a.self.dim())
    idx = (slice(None),) * d + (a.index,)
    if a.aten_name == "index_fill":
        if isinstance(a.value, torch.Tensor):
            raise Unsupported("index_fill with a tensor value")
        return _indexed_write_plan(a.self, idx, a.value, a.meta, None)
    source, steps = a.source, []
    alpha = getattr(a, "alpha", 1)
    if a.aten_name == "index_add" and alpha != 1:
        scaled = a.meta(torch.mul, source, alpha)
        steps.append(Emit("mul", [source, None], {"scalar": finite(alpha, "alpha"), "reverse": False}, scaled))
        source = scaled
    # source has x's shape with len(index) at dim d: what x[(:,) * d + (index,)] reads, so it is the value
    return steps + _indexed_write_plan(a.self, idx, source, a.meta, None, accumulate=a.aten_name == "index_add")


@aten_rule("diagonal")
def diagonal(a):
    """torch.diagonal(x, offset, dim1, dim2) (and trace and diag_embed's reads through it): the two dims moved last
    (a permute, where they are not), merged into one (reshape), and every (m + 1)-th element of it from the
    offset's first entry (a strided slice): the diagonal, as the last dim."""
    x, offset = a.self, int(getattr(a, "offset", 0))
    d1, d2 = dim(getattr(a, "dim1", 0), x.dim()), dim(getattr(a, "dim2", 1), x.dim())
    n, m = int(x.shape[d1]), int(x.shape[d2])
    length = max(0, min(n, m - offset)) if offset >= 0 else max(0, min(n + offset, m))
    if length == 0:
        raise Unsupported(f"an empty diagonal (offset {offset} of {n} x {m})")
    b, cur = _Steps(a), x
    rest = [d for d in range(x.dim()) if d not in (d1, d2)]
    if rest + [d1, d2] != list(range(x.dim())):
        perm = rest + [d1, d2]
        cur = b("permute", [cur], {"dims": perm}, lambda t: t.permute(perm), cur)
    lead = shape(cur)[:-2]
    cur = b("reshape", [cur], {"shape": lead + [n * m]}, torch.reshape, cur, lead + [n * m])
    start = offset if offset >= 0 else -offset * m
    end = start + (length - 1) * (m + 1) + 1
    b("slice", [cur], {"dim": len(lead), "start": start, "end": end, "step": m + 1},
      lambda t: t[..., start:end:m + 1], cur)
    return b.done(a.out)


@aten_rule("diagonal_scatter")
def diagonal_scatter(a):
    """torch.diagonal_scatter(x, src, offset, dim1, dim2): diagonal_write_plan."""
    x = a.self
    view = DiagonalView(int(getattr(a, "offset", 0)), dim(getattr(a, "dim1", 0), x.dim()),
                        dim(getattr(a, "dim2", 1), x.dim()))
    return diagonal_write_plan(x, view, a.src, a.meta, a.out)


@aten_rule("__lshift__ __rshift__ bitwise_left_shift bitwise_right_shift")
def shift(a):
    """x << k and x >> k of an integer tensor by a number: x * 2**k (two's complement wraps as the shift does) and
    floor_divide(x, 2**k) (an arithmetic right shift rounds toward -inf, as floor division does)."""
    x, k = a.self, getattr(a, "other", None)
    if isinstance(k, torch.Tensor) and k.dim() == 0 and k.device.type != "meta":
        k = int(k)
    if not isinstance(x, torch.Tensor) or x.dtype.is_floating_point or not isinstance(k, int):
        raise Unsupported("a shift of an integer tensor by a Python int (a tensor of shift amounts is not supported)")
    bits = torch.iinfo(x.dtype).bits
    if not 0 <= k < bits - 1:  # (2**(bits - 1) is not a number of the dtype)
        raise Unsupported(f"a shift by {k} of a {bits}-bit integer")
    left = a.aten_name in ("__lshift__", "bitwise_left_shift")
    return Emit("mul" if left else "floor_divide", [x, None], {"scalar": 2 ** k, "reverse": False})


@aten_rule("fmax fmin")
def fmax_fmin(a):
    """torch.fmax / fmin: maximum / minimum that ignore a NaN operand (NaN only where both are NaN)."""
    x, y, b = a.self, a.other, _Steps(a)
    op = "maximum" if a.aten_name == "fmax" else "minimum"
    if not a.out.dtype.is_floating_point:
        return Emit(op, [x, y], {})
    m = b(op, [x, y], {}, getattr(torch, op), x, y)
    y_nan = b("isnan", [y], {}, torch.isnan, y)
    m = b("where", [y_nan, x, m], {}, torch.where, y_nan, x, m)
    x_nan = b("isnan", [x], {}, torch.isnan, x)
    b("where", [x_nan, y, m], {}, torch.where, x_nan, y, m)
    return b.done(a.out)


@aten_rule("signbit")
def signbit(a):
    """torch.signbit: x < 0, and -0.0 (its reciprocal is -inf) for floats; a NaN's sign bit is not read (False)."""
    b = _Steps(a)
    _negative(b, a.self)
    return b.done(a.out)


@aten_rule("slice_scatter select_scatter")
def slice_select_scatter(a):
    """torch.slice_scatter / select_scatter: x with src written over a slice / an index of one dim, as the
    importer's write x[..., region] = src."""
    x = a.self
    d = dim(getattr(a, "dim", 0), x.dim())
    if a.aten_name == "select_scatter":
        region = int(a.index)
    else:
        region = slice(getattr(a, "start", None), getattr(a, "end", None), getattr(a, "step", 1) or 1)
    return write_plan(x, (slice(None),) * d + (region,), a.src, a.meta, None)


@aten_rule("masked_scatter")
def masked_scatter(a):
    """x.masked_scatter(mask, source): the mask's True positions (row-major) take source's elements in order: the
    k-th True position reads source.flatten()[k], k a running count of the mask (a cumulative sum); the others
    keep x. More True positions than source elements make the read out of range: it traps, as torch raises."""
    x, mask, src, b = a.self, a.mask, a.source, _Steps(a)
    n, i64 = x.numel(), torch.int64
    if shape(mask) != shape(x):
        mask = b("expand", [mask], {"shape": shape(x)}, lambda t: t.expand(shape(x)), mask)
    flat_mask = b("reshape", [mask], {"shape": [n]}, torch.reshape, mask, [n])
    flat_x = b("reshape", [x], {"shape": [n]}, torch.reshape, x, [n])
    count = b("cast", [flat_mask], {"dtype": i64}, lambda t: t.to(i64), flat_mask)
    pos = b("cumsum", [count], {"dim": 0}, torch.cumsum, count, 0)
    pos = b.scalar("sub", pos, 1)
    pos = b("where", [flat_mask, pos, Const(0, i64)], {}, lambda m, t: torch.where(m, t, 0), flat_mask, pos)
    m = src.numel()
    flat_src = b("reshape", [src], {"shape": [m]}, torch.reshape, src, [m])
    if src.dtype != x.dtype:
        flat_src = b("cast", [flat_src], {"dtype": x.dtype}, lambda t: t.to(x.dtype), flat_src)
    taken = b("index_select", [flat_src, pos], {"dim": 0}, torch.index_select, flat_src, 0, pos)
    out = b("where", [flat_mask, taken, flat_x], {}, torch.where, flat_mask, taken, flat_x)
    b("reshape", [out], {"shape": shape(x)}, torch.reshape, out, shape(x))
    return b.done(a.out)


@aten_rule("_cdist_forward")
def cdist(a):
    """torch.cdist(x1 (..., P, M), x2 (..., R, M), p): the p-norm of every difference x1[i] - x2[j], taken from the
    differences themselves (torch's p = 2 path for more than 25 rows goes through a GEMM, |x|^2 + |y|^2 - 2 x.y,
    which cancels for close points; this one does not): a broadcast sub and a norm over M, which the
    reduce_prologue skill computes on the fly without storing the differences."""
    x1, x2, p = a.x1, a.x2, float(a.p)
    if p != p or p < 0:
        raise Unsupported(f"p={p}")
    b = _Steps(a)
    s1 = shape(x1)[:-1] + [1, shape(x1)[-1]]
    s2 = shape(x2)[:-2] + [1] + shape(x2)[-2:]
    u1 = b("reshape", [x1], {"shape": s1}, torch.reshape, x1, s1)
    u2 = b("reshape", [x2], {"shape": s2}, torch.reshape, x2, s2)
    d = b("sub", [u1, u2], {}, torch.sub, u1, u2)
    b("norm", [d], {"dims": [d.dim() - 1], "keepdim": False, "p": finite(p, "p")}, torch.linalg.vector_norm, d, p, -1)
    return b.done()


@aten_rule("rrelu_with_noise")
def rrelu(a):
    if getattr(a, "training", False):
        raise Unsupported("training=True draws a random slope per element")
    return Emit("leaky_relu", [a.self], {"negative_slope": (float(a.lower) + float(a.upper)) / 2})


@aten_rule("std")
def std(a):
    attrs = {"dims": dims(getattr(a, "dim", None), a.self.dim()), "keepdim": bool(getattr(a, "keepdim", False)),
             "correction": _correction(a)}
    v = a.meta(torch.empty, shape(a.out), dtype=a.out.dtype, device="meta")
    return [Emit("var", [a.self], attrs, v), Emit("sqrt", [v], {})]


@aten_rule("linalg_vector_norm norm")
def vector_norm(a):
    p = getattr(a, "ord", getattr(a, "p", 2))
    return norm_plan(a, a.self, 2.0 if p is None else float(p), getattr(a, "dim", None),
                     getattr(a, "keepdim", False), getattr(a, "dtype", None))


def _arg_reduce(op):
    def emit(a):
        d = None if a.dim is None else dim(a.dim, a.self.dim())
        return Emit(op, [a.self], {"dim": d, "keepdim": bool(a.keepdim)})
    return emit


aten_rule("argmax")(_arg_reduce("argmax"))
aten_rule("argmin")(_arg_reduce("argmin"))


def _max_min(red, arg, elem):
    def emit(a):
        if hasattr(a, "other"):
            return binary(elem, a.self, a.other)
        if not hasattr(a, "dim"):
            return Emit(red, [a.self], {"dims": [], "keepdim": False})
        d = dim(a.dim, a.self.dim())
        values, indices = a.out
        return [Emit(red, [a.self], {"dims": [d], "keepdim": bool(a.keepdim)}, values),
                Emit(arg, [a.self], {"dim": d, "keepdim": bool(a.keepdim)}, indices)]
    return emit


aten_rule("max")(_max_min("amax", "argmax", "maximum"))
aten_rule("min")(_max_min("amin", "argmin", "minimum"))


def _softmax(op):
    def emit(a):
        x, steps = a.self, []
        if a.out.dtype != x.dtype:  # half_to_float / dtype=
            steps, x = _dtype_cast(a, x, a.out.dtype)
        return steps + [Emit(op, [x], {"dim": dim(a.dim, x.dim())})]
    return emit


aten_rule("_softmax softmax")(_softmax("softmax"))
aten_rule("_log_softmax log_softmax")(_softmax("log_softmax"))


def _scan(op):
    def emit(a):
        steps, x = _dtype_cast(a, a.self, a.dtype)
        return steps + [Emit(op, [x], {"dim": dim(a.dim, x.dim())})]
    return emit


aten_rule("cumsum")(_scan("cumsum"))
aten_rule("cumprod")(_scan("cumprod"))
aten_rule("logcumsumexp")(lambda a: Emit("logcumsumexp", [a.self], {"dim": dim(a.dim, a.self.dim())}))


# ---------------------------------------------------------------- normalization, contractions, pooling

@aten_rule("native_layer_norm")
def native_layer_norm(a):
    return Emit("layer_norm", [a.input, a.weight, a.bias],
                {"normalized_shape": tup(a.normalized_shape, 1), "eps": a.eps}, a.out[0])


@aten_rule("native_group_norm")
def native_group_norm(a):
    return Emit("group_norm", [a.input, a.weight, a.bias], {"num_groups": a.group, "eps": a.eps}, a.out[0])


@aten_rule("native_batch_norm _native_batch_norm_legit _native_batch_norm_legit_no_training")
def native_batch_norm(a):
    training = bool(getattr(a, "training", False))
    if training and (getattr(a, "running_mean", None) is not None):
        raise Unsupported("batch norm in train mode with running statistics (updated in place)")
    return Emit("batch_norm", [a.input, a.weight, a.bias, getattr(a, "running_mean", None),
                               getattr(a, "running_var", None)],
                {"training": training, "momentum": a.momentum, "eps": a.eps}, a.out[0])


def _transposed(a, t):
    """The 2-D tensor that t is the transpose of (aten.t / transpose(0, 1) / permute([1, 0]) seen before)."""
    hit = a.ctx["transposed"].get(id(t))
    return hit[1] if hit is not None and hit[0] is t else None


@aten_rule("mm")
def mm(a):
    w = _transposed(a, a.mat2)
    if w is not None and a.self.dim() == 2:
        return Emit("linear", [a.self, w, None], {})
    return Emit("matmul", [a.self, a.mat2], {})


@aten_rule("bmm matmul dot mv")
def matmul(a):
    other = next(getattr(a, k) for k in ("mat2", "other", "tensor", "vec") if hasattr(a, k))
    return Emit("matmul", [a.self, other], {})


def _scaled_sum(a, prod, bias):
    """alpha * prod + beta * bias, the tail of addmm / baddbmm."""
    steps = [prod[0]]
    cur = prod[0].out
    if a.alpha != 1:
        nxt = a.meta(torch.mul, cur, a.alpha)
        steps.append(Emit("mul", [cur, None], {"scalar": a.alpha, "reverse": False}, nxt))
        cur = nxt
    if a.beta == 0:
        return steps[:-1] + [steps[-1]._replace(out=None)]
    b = bias
    if a.beta != 1:
        nb = a.meta(torch.mul, bias, a.beta)
        steps.append(Emit("mul", [bias, None], {"scalar": a.beta, "reverse": False}, nb))
        b = nb
    return steps + [Emit("add", [cur, b], {})]


@aten_rule("addmm")
def addmm(a):
    w = _transposed(a, a.mat2)
    if w is not None and a.alpha == 1 and a.beta == 1 and a.self.dim() == 1 and a.mat1.dim() == 2:
        return Emit("linear", [a.mat1, w, a.self], {})
    prod = a.meta(torch.matmul, a.mat1, a.mat2)
    return _scaled_sum(a, [Emit("matmul", [a.mat1, a.mat2], {}, prod)], a.self)


@aten_rule("baddbmm")
def baddbmm(a):
    prod = a.meta(torch.matmul, a.batch1, a.batch2)
    return _scaled_sum(a, [Emit("matmul", [a.batch1, a.batch2], {}, prod)], a.self)


@aten_rule("convolution")
def convolution(a):
    r = a.weight.dim() - 2
    attrs = {"stride": tup(a.stride, r), "padding": tup(a.padding, r), "dilation": tup(a.dilation, r),
             "groups": a.groups}
    if a.transposed:
        attrs["output_padding"] = tup(a.output_padding, r)
        return Emit("conv_transpose", [a.input, a.weight, a.bias], attrs)
    return Emit("conv", [a.input, a.weight, a.bias], attrs)


def _rank(a):
    m = re.search(r"([123])d", a.aten_name)
    return int(m.group(1)) if m else a.self.dim() - 2


@aten_rule("max_pool2d_with_indices max_pool3d_with_indices max_pool1d max_pool2d max_pool3d")
def max_pool(a):
    """max_pool; the indices of max_pool2d_with_indices, where something reads them, by max_pool_indices_plan
    (an unread indices output is never computed: the graph keeps only what reaches an output)."""
    r = _rank(a)
    k = tup(a.kernel_size, r)
    attrs = {"kernel_size": k, "stride": tup(a.stride, r) if a.stride else k, "padding": tup(a.padding, r),
             "dilation": tup(a.dilation, r), "ceil_mode": bool(a.ceil_mode)}
    if not isinstance(a.out, (list, tuple)):
        return Emit("max_pool", [a.self], attrs)
    values, indices = a.out
    if a.aten_name != "max_pool2d_with_indices":
        return Emit("max_pool", [a.self], attrs, values)
    b = _Steps(a)
    b.steps.append(Emit("max_pool", [a.self], attrs, values))
    try:
        max_pool_indices_plan(b, a.self, k, attrs["stride"], attrs["padding"], attrs["dilation"], attrs["ceil_mode"],
                              shape(values))
    except Unsupported:  # the values alone; reading the indices then fails where they are read
        return Emit("max_pool", [a.self], attrs, values)
    return b.done(indices)


@aten_rule("max_unpool2d")
def max_unpool2d(a):
    """F.max_unpool2d(x, indices, output_size): each value written at its flat index h * W + w of a zero plane of
    the output size, as a scatter along the flattened plane (an index outside it traps, as torch raises)."""
    x, idx, (ho, wo) = a.self, a.indices, [int(v) for v in a.output_size]
    b, lead = _Steps(a), shape(a.self)[:-2]
    n = int(x.shape[-2]) * int(x.shape[-1])
    xf = b("reshape", [x], {"shape": lead + [n]}, torch.reshape, x, lead + [n])
    jf = b("reshape", [idx], {"shape": lead + [n]}, torch.reshape, idx, lead + [n])
    zeros = b("full", [], {"shape": lead + [ho * wo], "value": 0, "dtype": x.dtype}, torch.zeros, lead + [ho * wo],
              dtype=x.dtype, device="meta")
    put = b("scatter", [zeros, jf, xf], {"dim": len(lead)}, torch.scatter, zeros, len(lead), jf, xf)
    b("reshape", [put], {"shape": lead + [ho, wo]}, torch.reshape, put, lead + [ho, wo])
    return b.done(a.out)


@aten_rule("avg_pool1d avg_pool2d avg_pool3d")
def avg_pool(a):
    r = _rank(a)
    k = tup(a.kernel_size, r)
    return Emit("avg_pool", [a.self], {"kernel_size": k, "stride": tup(a.stride, r) if a.stride else k,
                                       "padding": tup(a.padding, r), "ceil_mode": bool(a.ceil_mode),
                                       "count_include_pad": bool(a.count_include_pad),
                                       "divisor_override": getattr(a, "divisor_override", None)})


@aten_rule("_adaptive_avg_pool2d _adaptive_avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d")
def adaptive_avg_pool(a):
    r = _rank(a)
    return Emit("adaptive_avg_pool", [a.self], {"output_size": shape(a.out)[-r:]})


@aten_rule("adaptive_max_pool2d adaptive_max_pool3d")
def adaptive_max_pool(a):
    """adaptive_max_pool; the indices of the 2-d one (return_indices=True), where the input's size is a multiple of
    the output's: the windows are then a max_pool's (kernel = stride = the ratio), whose indices max_pool_indices_plan
    makes. Other sizes give windows of varying length, whose indices are refused where something reads them."""
    r = _rank(a)
    values, indices = a.out
    attrs = {"output_size": shape(values)[-r:]}
    plane, out = shape(a.self)[-r:], shape(values)[-r:]
    if r != 2 or any(i % o for i, o in zip(plane, out)):
        return Emit("adaptive_max_pool", [a.self], attrs, values)
    b = _Steps(a)
    b.steps.append(Emit("adaptive_max_pool", [a.self], attrs, values))
    k = [i // o for i, o in zip(plane, out)]
    try:
        max_pool_indices_plan(b, a.self, k, k, [0, 0], [1, 1], False, shape(values))
    except Unsupported:
        return Emit("adaptive_max_pool", [a.self], attrs, values)
    return b.done(indices)


@aten_rule("dropout native_dropout")
def dropout(a):
    x = a.input
    out = a.out[0] if isinstance(a.out, (list, tuple)) else None
    if not a.train or a.p == 0:
        return Alias(x, out)
    return Emit("dropout", [x], {"p": a.p, "training": True}, out)


# ---------------------------------------------------------------- layout

@aten_rule("view _unsafe_view reshape _reshape_alias view_copy unsqueeze squeeze unsqueeze_copy squeeze_copy "
           "flatten unflatten")
def reshape(a):
    # An in-place one (squeeze_, as torch.quantile ends with) has already changed a.self, which is a.out: the
    # shapes compare equal, yet the value the graph holds for it still has the old shape.
    if shape(a.out) == shape(a.self) and functional_name(a.aten_name) == a.aten_name:
        return Alias(a.self)
    return Emit("reshape", [a.self], {"shape": shape(a.out)})


def _note_transpose(a, perm):
    if a.self.dim() == 2 and list(perm) == [1, 0]:
        a.ctx["transposed"][id(a.out)] = (a.out, a.self)


@aten_rule("permute permute_copy")
def permute(a):
    perm = [dim(d, a.self.dim()) for d in a.dims]
    _note_transpose(a, perm)
    return _permute(a.self, perm)


@aten_rule("transpose transpose_copy")
def transpose(a):
    n = a.self.dim()
    perm = list(range(n))
    d0, d1 = dim(a.dim0, n), dim(a.dim1, n)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    _note_transpose(a, perm)
    return _permute(a.self, perm)


@aten_rule("t t_copy")
def t(a):
    perm = list(reversed(range(a.self.dim())))
    _note_transpose(a, perm)
    return _permute(a.self, perm)


@aten_rule("expand expand_copy")
def expand(a):
    if shape(a.out) == shape(a.self):
        return Alias(a.self)
    return Emit("expand", [a.self], {"shape": shape(a.out)})


@aten_rule("slice slice_copy")
def slice_(a):
    x = a.self
    d = dim(a.dim, x.dim())
    n = int(x.shape[d])
    start, end, step = slice(a.start, a.end, a.step).indices(n)
    if (start, max(start, end), step) == (0, n, 1):
        return Alias(x)
    return Emit("slice", [x], {"dim": d, "start": start, "end": max(start, end), "step": step})


@aten_rule("select select_copy")
def select(a):
    d = dim(a.dim, a.self.dim())
    i = int(a.index)
    return Emit("select", [a.self], {"dim": d, "index": i + int(a.self.shape[d]) if i < 0 else i})


@aten_rule("cat concat")
def cat(a):
    ts = [t for t in a.tensors if not (t.dim() == 1 and int(t.shape[0]) == 0)]  # legacy empty (0,) pieces
    if len(ts) == 1:
        return Alias(ts[0])
    return Emit("cat", ts, {"dim": dim(a.dim, max(t.dim() for t in ts))})


@aten_rule("stack")
def stack(a):
    ts = list(a.tensors)
    return Emit("stack", ts, {"dim": dim(a.dim, ts[0].dim() + 1)})


@aten_rule("split split_with_sizes unsafe_split unsafe_split_with_sizes chunk unsafe_chunk tensor_split "
           "split_copy split_with_sizes_copy")
def split(a):
    x = a.self
    d = dim(a.dim, x.dim())
    plan, start = [], 0
    for piece in a.out:
        n = int(piece.shape[d])
        plan.append(Emit("slice", [x], {"dim": d, "start": start, "end": start + n, "step": 1}, piece)
                    if n != int(x.shape[d]) else Alias(x, piece))
        start += n
    return plan


@aten_rule("unbind unbind_copy")
def unbind(a):
    d = dim(a.dim, a.self.dim())
    return [Emit("select", [a.self], {"dim": d, "index": i}, piece) for i, piece in enumerate(a.out)]


@aten_rule("flip")
def flip(a):
    return Emit("flip", [a.self], {"dims": dims(a.dims, a.self.dim())})


@aten_rule("tril")
def tril(a):
    return Emit("tril", [a.self], {"diagonal": a.diagonal})


@aten_rule("triu")
def triu(a):
    return Emit("triu", [a.self], {"diagonal": a.diagonal})


@aten_rule("alias detach lift_fresh lift_fresh_copy clone contiguous alias_copy detach_copy")
def same_value(a):
    return Alias(a.self)


@aten_rule("_to_copy to")
def to_copy(a):
    if a.out.dtype == a.self.dtype:
        return Alias(a.self)
    return Emit("cast", [a.self], {"dtype": a.out.dtype})


@aten_rule("copy")
def copy(a):
    return write_plan(a.self, (Ellipsis,), a.src, a.meta, a.out)


@aten_rule("fill")
def fill(a):
    return write_plan(a.self, (Ellipsis,), a.value, a.meta, a.out)


@aten_rule("zero")
def zero(a):
    return write_plan(a.self, (Ellipsis,), 0, a.meta, a.out)


_FACTORY_VALUES = {"zeros": 0, "zeros_like": 0, "new_zeros": 0, "empty": 0, "empty_like": 0, "new_empty": 0,
                   "empty_strided": 0, "new_empty_strided": 0, "ones": 1, "ones_like": 1, "new_ones": 1}


@aten_rule(" ".join(_FACTORY_VALUES) + " full full_like new_full scalar_tensor")
def full(a):
    name = a.aten_name
    v = _FACTORY_VALUES.get(name, getattr(a, "fill_value", getattr(a, "s", None)))
    if isinstance(v, torch.Tensor):
        raise Unsupported("a fill value given as a tensor")
    return Emit("full", [], {"shape": shape(a.out), "value": finite(v, "value"), "dtype": a.out.dtype})


@aten_rule("arange")
def arange(a):
    """start + step * i for i in [0, n): a cumulative sum of ones, so no constant tensor is needed
    (exact for integers, and for float32 up to 2**24 elements)."""
    start, step = (0, 1) if a.overload == "default" else (a.start, 1 if a.overload == "start" else a.step)
    n, dt, b = int(a.out.shape[0]), a.out.dtype, _Steps(a)
    cur = b.counting(n, dt)
    if start - step != 0:  # i + 1 -> start + step * i
        if step != 1:
            cur = b.scalar("mul", cur, step)
        cur = b.scalar("add", cur, start - step)
    elif step != 1:
        cur = b.scalar("mul", cur, step)
    return b.done()


@aten_rule("fft_fftfreq fft_rfftfreq")
def fftfreq(a):
    """torch.fft.fftfreq(n, d) / rfftfreq(n, d): the bins' frequencies, as torch makes them: the integers 0, 1, ...
    (fftfreq: the upper half wrapped to negative, k - n for k >= (n + 1) / 2), counted in int64 (a cumulative sum
    of ones, minus one), cast to the result's dtype and multiplied by 1 / (n d)."""
    n, d, dt, b, i64 = int(a.n), float(getattr(a, "d", 1.0)), a.out.dtype, _Steps(a), torch.int64
    count = int(a.out.shape[0])
    k = b.scalar("sub", b.counting(count, i64), 1)
    if a.aten_name == "fft_fftfreq":
        low, wrapped = b.scalar("lt", k, (n + 1) // 2), b.scalar("sub", k, n)
        k = b("where", [low, k, wrapped], {}, torch.where, low, k, wrapped)
    k = b("cast", [k], {"dtype": dt}, lambda t: t.to(dt), k)
    b.scalar("mul", k, 1.0 / (n * d))
    return b.done(a.out)


@aten_rule("hann_window hamming_window blackman_window bartlett_window")
def window_function(a):
    """torch's window functions (stft's windows) in torch's own order of operations, from k = 0, 1, ... counted in
    the result's dtype (a periodic window is the symmetric one of length N + 1 without its last point):
    hamming alpha - beta cos(2 pi k / (N - 1)) (hann: alpha = beta = 0.5), blackman 0.08 cos(4t) - 0.5 cos(2t) + 0.42
    with t = pi k / (N - 1), bartlett 2k / (N - 1) mirrored past the middle."""
    dt, b = a.out.dtype, _Steps(a)
    length = int(a.window_length)
    if length < 2:
        raise Unsupported(f"a window of length {length}")
    n = length + 1 if getattr(a, "periodic", True) else length
    k = b.scalar("sub", b.counting(n, dt), 1)
    name = a.aten_name
    if name in ("hann_window", "hamming_window"):
        alpha, beta = (0.5, 0.5) if name == "hann_window" else (float(getattr(a, "alpha", 0.54)),
                                                                float(getattr(a, "beta", 0.46)))
        w = b.scalar("add", b.scalar("mul", b("cos", [b.scalar("mul", k, math.pi * 2.0 / (n - 1))], {},
                                                 torch.cos, k), -beta), alpha)
    elif name == "blackman_window":
        t = b.scalar("mul", k, math.pi / (n - 1))
        c4 = b.scalar("mul", b("cos", [b.scalar("mul", t, 4)], {}, torch.cos, t), 0.08)
        c2 = b.scalar("mul", b("cos", [b.scalar("mul", t, 2)], {}, torch.cos, t), 0.5)
        w = b.scalar("add", b("sub", [c4, c2], {}, torch.sub, c4, c2), 0.42)
    else:  # bartlett
        t = b.scalar("mul", k, 2.0 / (n - 1))
        half = ((n - 1) >> 1) + 1
        low = b.scalar("lt", k, half)
        mirrored = b.scalar("add", b.scalar("mul", t, -1), 2)
        w = b("where", [low, t, mirrored], {}, torch.where, low, t, mirrored)
    if n != length:
        b("slice", [w], {"dim": 0, "start": 0, "end": length, "step": 1}, lambda u: u[:length], w)
    return b.done(a.out)


@aten_rule("repeat")
def repeat(a):
    """x.repeat(r): each dim n becomes (1, n) -> expand to (r, n) -> merged."""
    x, reps, b = a.self, [int(r) for r in a.repeats], _Steps(a)
    dims = [1] * (len(reps) - x.dim()) + shape(x)
    split = [v for n in dims for v in (1, n)]
    grown = [v for r, n in zip(reps, dims) for v in (r, n)]
    cur = b("reshape", [x], {"shape": split}, x.reshape, split)
    cur = b("expand", [cur], {"shape": grown}, cur.expand, grown)
    return b.steps + [Emit("reshape", [cur], {"shape": shape(a.out)})]


@aten_rule("roll")
def roll(a):
    """torch.roll: per (shift, dim), the last `shift` elements moved to the front (slices + cat)."""
    x, b = a.self, _Steps(a)
    shifts, dims_ = list(a.shifts), list(a.dims)
    cur = x
    if not dims_:
        cur = b("reshape", [x], {"shape": [x.numel()]}, x.reshape, [x.numel()])
        dims_ = [0]
    for shift, d in zip(shifts, dims_):
        d = dim(d, cur.dim())
        n = int(cur.shape[d])
        k = int(shift) % n if n else 0
        if k == 0:
            continue
        tail = b("slice", [cur], {"dim": d, "start": n - k, "end": n, "step": 1}, cur.narrow, d, n - k, k)
        head = b("slice", [cur], {"dim": d, "start": 0, "end": n - k, "step": 1}, cur.narrow, d, 0, n - k)
        cur = b("cat", [tail, head], {"dim": d}, torch.cat, [tail, head], d)
    if shape(cur) != shape(a.out):
        cur = b("reshape", [cur], {"shape": shape(a.out)}, cur.reshape, shape(a.out))
    return b.done() if b.steps else Alias(x)


@aten_rule("pixel_shuffle pixel_unshuffle")
def pixel_shuffle(a):
    x, b = a.self, _Steps(a)
    lead, (c, h, w) = shape(x)[:-3], shape(x)[-3:]
    n = len(lead)
    if a.aten_name == "pixel_shuffle":
        r = int(a.upscale_factor)
        split, perm = lead + [c // (r * r), r, r, h, w], [n, n + 3, n + 1, n + 4, n + 2]
    else:
        r = int(a.downscale_factor)
        split, perm = lead + [c, h // r, r, w // r, r], [n, n + 2, n + 4, n + 1, n + 3]
    perm = list(range(n)) + perm
    cur = b("reshape", [x], {"shape": split}, x.reshape, split)
    cur = b("permute", [cur], {"dims": perm}, cur.permute, perm)
    return b.steps + [Emit("reshape", [cur], {"shape": shape(a.out)})]


# ---------------------------------------------------------------- windows, padding, lookups

@aten_rule("unfold unfold_copy")
def unfold(a):
    return Emit("unfold", [a.self], {"dim": dim(a.dimension, a.self.dim()), "size": a.size, "step": a.step})


@aten_rule("constant_pad_nd")
def constant_pad_nd(a):
    return Emit("constant_pad", [a.self], {"pad": [int(p) for p in a.pad], "value": finite(float(a.value), "value")})


@aten_rule("embedding")
def embedding(a):
    return Emit("embedding", [a.weight, a.indices], {})


@aten_rule("index_select")
def index_select(a):
    return Emit("index_select", [a.self, a.index], {"dim": dim(a.dim, a.self.dim())})


@aten_rule("gather")
def gather(a):
    return Emit("gather", [a.self, a.index], {"dim": dim(a.dim, a.self.dim())})


_PAD_MODES = {"reflection": "reflect_pad", "replication": "replicate_pad"}


@aten_rule("reflection_pad1d reflection_pad2d reflection_pad3d replication_pad1d replication_pad2d replication_pad3d")
def mode_pad(a):
    return Emit(_PAD_MODES[a.aten_name.split("_")[0]], [a.self], {"pad": [int(p) for p in a.padding]})


def _upsample_scale(a, k):
    """One scale attr from ATen's per-dim scales (or a .vec overload's scale_factors): None when absent."""
    scales = getattr(a, "scale_factors", None)
    if scales is None:
        names = {1: ["scales"], 2: ["scales_h", "scales_w"], 3: ["scales_d", "scales_h", "scales_w"]}[k]
        scales = [getattr(a, n, None) for n in names]
    scales = [None if v is None else float(v) for v in scales]
    if all(v is None for v in scales):
        return None
    if len(set(scales)) != 1:
        raise Unsupported(f"per-dim scales {scales}")
    return scales[0]


@aten_rule("upsample_nearest1d upsample_nearest2d upsample_nearest3d")
def upsample_nearest(a):
    x = getattr(a, "self", None)
    x = x if x is not None else a.input
    size = shape(a.out)[2:]
    return Emit("upsample_nearest", [x], {"size": size, "scale": _upsample_scale(a, len(size))})


@aten_rule("upsample_linear1d upsample_bilinear2d upsample_trilinear3d")
def upsample_linear(a):
    x = getattr(a, "self", None)
    x = x if x is not None else a.input
    size = shape(a.out)[2:]
    return Emit("upsample_linear", [x], {"size": size, "align_corners": bool(a.align_corners),
                                         "scale": _upsample_scale(a, len(size))})


@aten_rule("upsample_bicubic2d")
def upsample_bicubic(a):
    x = getattr(a, "self", None)
    x = x if x is not None else a.input
    size = shape(a.out)[2:]
    return Emit("upsample_bicubic", [x], {"size": size, "align_corners": bool(a.align_corners),
                                          "scale": _upsample_scale(a, len(size))})


@aten_rule("grid_sampler_2d")
def grid_sampler_2d(a):
    mode = (GRID_SAMPLE_MODES + ("bicubic",))[int(a.interpolation_mode)]
    return grid_sample_plan(a.input, a.grid, mode, GRID_SAMPLE_PADDINGS[int(a.padding_mode)], a.align_corners)


def _base_coords(b, n, align_corners, dt):
    """torch's linspace_from_neg_one: n points of [-1, 1] (align_corners) or their pixel centres (2i + 1) / n - 1,
    as (i + 1) * step + offset from a cumulative sum of ones; one point is 0."""
    if n <= 1:
        return b("full", [], {"shape": [n], "value": 0, "dtype": dt}, torch.zeros, n, dtype=dt, device="meta")
    step = 2.0 / (n - 1) if align_corners else 2.0 / n
    offset = -1.0 - step if align_corners else -1.0 - 1.0 / n
    cur = b.scalar("mul", b.counting(n, dt), step)
    return b.scalar("add", cur, offset)


@aten_rule("affine_grid_generator")
def affine_grid_generator(a):
    """F.affine_grid: grid[n, ..., j] = sum_k base[..., k] * theta[n, j, k] over base = (x, y[, z], 1), the
    pixel coordinates of the size's spatial dims (x the last). Torch's native kernel computes the same sum as a
    batched GEMM (and the coordinates with linspace): the grid's last bits may differ. Kept whole (not torch's
    decomposition) so that torch 1.13, which has none, imports it too."""
    theta, size, b = a.theta, [int(v) for v in a.size], _Steps(a)
    k, dt = len(size) - 2, theta.dtype
    if k not in (2, 3):
        raise Unsupported(f"affine_grid of size {size} (4-D and 5-D sizes are supported)")
    spatial = size[2:]
    cols = []
    for d in range(k):  # x over the last spatial dim, y the one before, ...
        n = spatial[k - 1 - d]
        coords = _base_coords(b, n, bool(a.align_corners), dt)
        view = [1] * k + [1]
        view[k - 1 - d] = n
        coords = b("reshape", [coords], {"shape": view}, coords.reshape, view)
        cols.append(b("expand", [coords], {"shape": spatial + [1]}, coords.expand, spatial + [1]))
    cols.append(b("full", [], {"shape": spatial + [1], "value": 1, "dtype": dt}, torch.ones, spatial + [1], dtype=dt,
                  device="meta"))
    base = b("cat", cols, {"dim": k}, torch.cat, cols, k)
    points = 1
    for n in spatial:
        points *= n
    base = b("reshape", [base], {"shape": [1, points, 1, k + 1]}, base.reshape, [1, points, 1, k + 1])
    th = b("reshape", [theta], {"shape": [size[0], 1, k, k + 1]}, theta.reshape, [size[0], 1, k, k + 1])
    prod = b("mul", [base, th], {}, torch.mul, base, th)
    total = b("sum", [prod], {"dims": [3], "keepdim": False}, torch.sum, prod, 3)
    b("reshape", [total], {"shape": shape(a.out)}, total.reshape, shape(a.out))
    return b.done()


@aten_rule("sort")
def sort(a):
    attrs = {"dim": dim(a.dim, a.self.dim()), "descending": bool(a.descending)}
    values, indices = a.out
    return [Emit("sort", [a.self], attrs, values), Emit("argsort", [a.self], attrs, indices)]


@aten_rule("topk")
def topk(a):
    attrs = {"k": int(a.k), "dim": dim(a.dim, a.self.dim()), "largest": bool(a.largest)}
    values, indices = a.out
    return [Emit("topk", [a.self], attrs, values), Emit("topk_indices", [a.self], attrs, indices)]


@aten_rule("cummax cummin")
def running_extreme(a):
    op, d = a.aten_name, dim(a.dim, a.self.dim())
    values, indices = a.out
    return [Emit(op, [a.self], {"dim": d}, values), Emit(f"{op}_indices", [a.self], {"dim": d}, indices)]


@aten_rule("scatter")
def scatter(a):
    """Tensor.scatter inside a capture: import_ops.scatter_plan."""
    src = getattr(a, "src", None)
    return scatter_plan(a, a.self, dim(a.dim, a.self.dim()), a.index, src if isinstance(src, torch.Tensor) else a.value,
                        getattr(a, "reduce", None))


# scatter_reduce's reduce -> the kforge op that combines an element into its position ('mean' is a sum and a count)
_SCATTER_COMBINE = {"sum": "scatter_add", "mean": "scatter_add", "prod": "scatter_prod", "amax": "scatter_amax",
                    "amin": "scatter_amin"}


def _combine_identity(how, dt):
    """The value the combine leaves unchanged: 0 (sum, mean), 1 (prod), the lowest (amax) or highest (amin)."""
    if how in ("sum", "mean", "prod"):
        return int(how == "prod")
    if dt.is_floating_point:
        return float("-inf") if how == "amax" else float("inf")
    info = torch.iinfo(dt)
    return info.min if how == "amax" else info.max


def _scatter_reduce_plan(b, x, d, idx, src, how, keep_self):
    """torch.scatter_reduce(x, d, idx, src, how, include_self=keep_self) as kforge ops: the combine op of
    _SCATTER_COMBINE over x (include_self=False: over x with the identity written first where anything lands);
    'mean' that sum over the count of what landed (plus one for self), a position nothing lands on keeping its
    value, as torch's. The meta result of every combine is scatter_add's (same shape and dtype)."""
    if how not in _SCATTER_COMBINE:
        raise Unsupported(f"reduce={how!r} (sum, mean, prod, amax and amin are supported)")
    dt = x.dtype
    if dt == torch.bool:
        raise Unsupported(f"scatter_reduce {how!r} of a bool tensor; cast it to an integer type first")
    if how == "mean" and not dt.is_floating_point:
        raise Unsupported("reduce='mean' of an integer tensor")
    base = x
    if not keep_self:
        ident = _combine_identity(how, dt)
        base = b("scatter_value", [x, idx], {"dim": d, "value": finite(ident, "value")},
                 lambda t, i: t.scatter(d, i, ident), x, idx)
    total = b(_SCATTER_COMBINE[how], [base, idx, src], {"dim": d}, torch.scatter_add, base, d, idx, src)
    if how != "mean":
        return total
    start = b("full", [], {"shape": shape(x), "value": 1 if keep_self else 0, "dtype": dt}, torch.zeros, shape(x),
              dtype=dt, device="meta")
    ones = b("full", [], {"shape": shape(idx), "value": 1, "dtype": dt}, torch.ones, shape(idx), dtype=dt,
             device="meta")
    count = b("scatter_add", [start, idx, ones], {"dim": d}, torch.scatter_add, start, d, idx, ones)
    count = b("clamp", [count], {"min": 1, "max": None}, lambda t: t.clamp(min=1), count)
    return b("div", [total, count], {}, torch.div, total, count)


@aten_rule("scatter_reduce")
def scatter_reduce(a):
    """Tensor.scatter_reduce (sum, mean, prod, amax, amin; include_self or not): _scatter_reduce_plan."""
    b = _Steps(a)
    _scatter_reduce_plan(b, a.self, dim(a.dim, a.self.dim()), a.index, a.src, a.reduce,
                         bool(getattr(a, "include_self", True)))
    return b.done(a.out)


@aten_rule("index_reduce")
def index_reduce(a):
    """Tensor.index_reduce (prod, mean, amax, amin; include_self or not) along dim: the 1-d index made a scatter
    index (reshaped to lie along dim, expanded to the source's shape), then _scatter_reduce_plan."""
    x, src, b = a.self, a.source, _Steps(a)
    d = dim(a.dim, x.dim())
    idx = a.index
    if idx.dim() > 1:
        raise Unsupported(f"a {idx.dim()}-d index (index_reduce takes a 1-d one)")
    if idx.dtype != torch.int64:
        idx = b("cast", [idx], {"dtype": torch.int64}, lambda t: t.to(torch.int64), idx)
    along = [1] * src.dim()
    if src.dim():
        along[d] = -1
    idx = b("reshape", [idx], {"shape": along}, torch.reshape, idx, along)
    idx = b("expand", [idx], {"shape": shape(src)}, lambda t: t.expand(shape(src)), idx)
    _scatter_reduce_plan(b, x, d, idx, src, a.reduce, bool(getattr(a, "include_self", True)))
    return b.done(a.out)


@aten_rule("scatter_add")
def scatter_add(a):
    return Emit("scatter_add", [a.self, a.index, a.src], {"dim": dim(a.dim, a.self.dim())})


@aten_rule("col2im")
def col2im(a):
    return Emit("fold", [a.self], {"output_size": tup(a.output_size, 2), "kernel_size": tup(a.kernel_size, 2),
                                   "dilation": tup(a.dilation, 2), "padding": tup(a.padding, 2),
                                   "stride": tup(a.stride, 2)})


@aten_rule("im2col")
def im2col(a):
    """F.unfold: pad, take windows along H then W (unfold appends each window dim), keep every dilation-th
    element, then (N, C, oh, ow, kh, kw) -> (N, C * kh * kw, oh * ow)."""
    x = a.self
    (kh, kw), (dh, dw) = tup(a.kernel_size, 2), tup(a.dilation, 2)
    (ph, pw), (sh, sw) = tup(a.padding, 2), tup(a.stride, 2)
    steps = []

    def emit(op, src, attrs, fn, *fargs):
        nxt = a.meta(fn, *fargs)
        steps.append(Emit(op, [src], attrs, nxt))
        return nxt

    cur = x
    if ph or pw:
        cur = emit("constant_pad", cur, {"pad": [pw, pw, ph, ph], "value": 0.0}, F.pad, cur, (pw, pw, ph, ph))
    hd = cur.dim() - 2
    for d, k, dil, s in ((hd, kh, dh, sh), (hd + 1, kw, dw, sw)):
        span = dil * (k - 1) + 1
        cur = emit("unfold", cur, {"dim": d, "size": span, "step": s}, cur.unfold, d, span, s)
        if dil > 1:
            last = cur.dim() - 1
            cur = emit("slice", cur, {"dim": last, "start": 0, "end": span, "step": dil},
                       cur.__getitem__, (Ellipsis, slice(0, span, dil)))
    lead = list(range(cur.dim() - 4))  # N, C (or C)
    perm = lead + [cur.dim() - 2, cur.dim() - 1, cur.dim() - 4, cur.dim() - 3]
    cur = emit("permute", cur, {"dims": perm}, cur.permute, perm)
    steps.append(Emit("reshape", [cur], {"shape": shape(a.out)}))
    return steps

