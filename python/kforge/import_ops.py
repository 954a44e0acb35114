# The importer's table: torch callables -> canonical ops.def ops, each with an argument normalizer.
"""How a traced torch call becomes graph nodes.

Every entry maps one or more torch callables (found by dotted name, skipped when this torch lacks
them) to a normalizer. The tracer binds the call's arguments to the entry's signature, runs the real
callable on meta tensors, and hands the normalizer an `Args` object (bound arguments as attributes,
the torch result as `a.out`). The normalizer answers with a plan:

  Emit(op, inputs, attrs)        one node whose value is the call's result (or `out=` for one element
                                 of a multi-output result, or an intermediate of a decomposition)
  Alias(tensor)                  no node: the result is the same value as `tensor`
  [Emit | Alias, ...]            several, in order (decompositions, multi-output calls)

Inputs of an Emit are tensors (resolved to value ids by the tracer), None (absent optional input) or
Python numbers (materialized as a 0-d `full` constant). Attrs may omit schema defaults; the tracer
fills them in and checks names against ops.def.
"""
import inspect
import math
from typing import Any, NamedTuple, Optional

import torch
import torch.nn.functional as F


class UserError(Exception):
    """A problem the user can fix in the problem file: printed as one line, exit code 2."""


class InternalError(Exception):
    """A bug or missing piece of the importer itself: exit code 1."""


class Unsupported(Exception):
    """A construct the importer cannot express; the tracer adds file:line and the callable name."""


class Emit(NamedTuple):
    op: str
    inputs: list
    attrs: dict
    out: Any = None


class Alias(NamedTuple):
    src: Any
    out: Any = None


class _Steps:
    """A plan of several nodes: each call emits one and returns its meta value; done() makes the last one
    the op's result."""

    def __init__(self, a):
        self.a, self.steps = a, []

    def __call__(self, op, inputs, attrs, fn, *fargs, **fkw):
        out = self.a.meta(fn, *fargs, **fkw)
        self.steps.append(Emit(op, inputs, attrs, out))
        return out

    def scalar(self, op, x, v, reverse=False):
        """`op` of a tensor and a number (the number first when reverse): one node with the number as its attr."""
        fn = (lambda t: getattr(torch, op)(v, t)) if reverse else (lambda t: getattr(torch, op)(t, v))
        return self(op, [x, None], {"scalar": v, "reverse": reverse}, fn, x)

    def counting(self, n, dtype):
        """1, 2, ..., n as a 1-d tensor of `dtype`: a cumulative sum of ones (no op holds tensor data; exact for
        integers, and for float32 up to 2**24)."""
        ones = self("full", [], {"shape": [n], "value": 1, "dtype": dtype}, torch.ones, n, dtype=dtype, device="meta")
        return self("cumsum", [ones], {"dim": 0}, torch.cumsum, ones, 0)

    def done(self, out=None):
        self.steps[-1] = self.steps[-1]._replace(out=out)
        return self.steps


class Const(NamedTuple):
    """A number used as a tensor operand: becomes a 0-d `full` node of `dtype` (torch's default if None)."""
    value: Any
    dtype: Any = None


class Args:
    """Bound call arguments as attributes, plus the torch result `out` and a helper to run torch."""

    def __init__(self, name, bound, out, run):
        self.__dict__.update(bound)
        self.fname = name
        self.out = out
        self.meta = run  # meta(fn, *args): call fn untraced (for intermediate shapes)


class Rule(NamedTuple):
    name: str
    sig: Optional[inspect.Signature]
    norm: Any
    ops: tuple
    run: Any = None       # run(a) -> result, instead of calling the real callable
    fallback: Any = None  # fallback(a) -> result, when the real callable fails on meta tensors


# in-place calls that change a tensor's shape or flags, not its values
METADATA_INPLACE = {"unsqueeze_", "squeeze_", "transpose_", "t_", "swapaxes_", "swapdims_", "resize_", "resize_as_",
                    "as_strided_", "detach_", "requires_grad_", "share_memory_", "set_"}

RULES = {}   # callable -> Rule
NAMES = {}   # callable -> the dotted name it was registered under
DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
          torch.float64: "float64", torch.int64: "int64", torch.int32: "int32", torch.int8: "int8",
          torch.uint8: "uint8", torch.bool: "bool"}
_NS = {"torch": torch, "F": F, "Tensor": torch.Tensor}


def resolve(name):
    """'Tensor.T.__get__' -> the object, or None when this torch version lacks it."""
    head, *rest = name.split(".")
    obj = _NS.get(head)
    for part in rest:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _signature(sig):
    return None if sig is None else inspect.signature(eval(f"lambda {sig}: None"))


def rule(names, sig, ops, run=None, fallback=None, objs=()):
    """Decorator: register `norm` for every callable in `names` (space-separated dotted names) and `objs`."""
    def deco(norm):
        r = Rule(norm.__name__, _signature(sig), norm, tuple(ops.split()), run, fallback)
        for n, obj in [(n, resolve(n)) for n in names.split()] + list(objs):
            if obj is not None and obj not in RULES:
                RULES[obj] = r
                NAMES[obj] = n
        return norm
    return deco


def emittable_ops():
    """Every op a rule can emit, plus `identity` (an output that is an input or parameter itself)."""
    return sorted({op for r in RULES.values() for op in r.ops} | {"identity"})


# ---------------------------------------------------------------- argument helpers

def is_num(v):
    return isinstance(v, (int, float, bool)) and not isinstance(v, torch.Tensor)


def dim(d, rank):
    """Normalize one dim to [0, rank)."""
    r = max(rank, 1)
    d = int(d)
    return d + r if d < 0 else d


def dims(d, rank):
    """None/int/sequence -> sorted non-negative dim list ([] means all dims)."""
    if d is None:
        return []
    if not isinstance(d, (list, tuple, torch.Size)):
        d = [d]
    if rank == 0:
        return []
    return sorted(dim(x, rank) for x in d)


def seq_arg(vals):
    """view(2, 3) / view((2, 3)) / permute([0, 1]) -> a flat list."""
    if len(vals) == 1 and isinstance(vals[0], (list, tuple, torch.Size)):
        return list(vals[0])
    return list(vals)


def tup(v, r):
    """Expand an int (or 1-tuple) to a list of the spatial rank."""
    if isinstance(v, (list, tuple, torch.Size)):
        v = list(v)
        return [int(x) for x in (v * r if len(v) == 1 else v)]
    return [int(v)] * r


def shape(t):
    return [int(s) for s in t.shape]


def reduction(a):
    """Legacy size_average/reduce arguments -> reduction string."""
    if getattr(a, "size_average", None) is not None or getattr(a, "reduce", None) is not None:
        return torch.nn._reduction.legacy_get_string(a.size_average, a.reduce)
    return a.reduction


def no_extra(a):
    """Keyword arguments newer torch versions added (weight=, enable_gqa=): accept only None/False."""
    for k, v in getattr(a, "extra", {}).items():
        if v is not None and v is not False:
            raise Unsupported(f"argument {k}={v!r}")


def finite(v, what):
    """Numbers go into JSON as they are; inf, -inf and nan as the strings the C++ side reads."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


# ---------------------------------------------------------------- elementwise unary

_UNARY = {
    "relu": "torch.relu torch.relu_ Tensor.relu Tensor.relu_ F.relu F.relu_",
    "sigmoid": "torch.sigmoid torch.sigmoid_ Tensor.sigmoid Tensor.sigmoid_ F.sigmoid torch.special.expit",
    "tanh": "torch.tanh torch.tanh_ Tensor.tanh Tensor.tanh_ F.tanh",
    "selu": "torch.selu torch.selu_ F.selu F.selu_",
    "hardsigmoid": "F.hardsigmoid",
    "hardswish": "F.hardswish",
    "softsign": "F.softsign",
    "mish": "F.mish",
    "silu": "F.silu",
    "exp": "torch.exp torch.exp_ Tensor.exp Tensor.exp_",
    "log": "torch.log torch.log_ Tensor.log Tensor.log_",
    "abs": "torch.abs torch.abs_ torch.absolute Tensor.abs Tensor.abs_ Tensor.absolute Tensor.__abs__",
    "neg": "torch.neg torch.neg_ torch.negative Tensor.neg Tensor.neg_ Tensor.negative Tensor.__neg__",
    "sqrt": "torch.sqrt torch.sqrt_ Tensor.sqrt Tensor.sqrt_",
    "rsqrt": "torch.rsqrt torch.rsqrt_ Tensor.rsqrt Tensor.rsqrt_",
    "reciprocal": "torch.reciprocal torch.reciprocal_ Tensor.reciprocal Tensor.reciprocal_",
    "erf": "torch.erf torch.erf_ Tensor.erf Tensor.erf_ torch.special.erf",
    "sign": "torch.sign Tensor.sign Tensor.sign_",
}
for _op, _names in _UNARY.items():
    rule(_names, "input, inplace=False", _op)(lambda a, _op=_op: Emit(_op, [a.input], {}))


@rule("F.leaky_relu F.leaky_relu_", "input, negative_slope=0.01, inplace=False", "leaky_relu")
def leaky_relu(a):
    return Emit("leaky_relu", [a.input], {"negative_slope": a.negative_slope})


@rule("F.elu F.elu_", "input, alpha=1.0, inplace=False", "elu")
def elu(a):
    return Emit("elu", [a.input], {"alpha": a.alpha})


@rule("F.gelu", "input, approximate='none'", "gelu")
def gelu(a):
    return Emit("gelu", [a.input], {"approximate": a.approximate})


@rule("F.hardtanh F.hardtanh_", "input, min_val=-1.0, max_val=1.0, inplace=False", "hardtanh")
def hardtanh(a):
    return Emit("hardtanh", [a.input], {"min_val": a.min_val, "max_val": a.max_val})


@rule("F.relu6", "input, inplace=False", "hardtanh")
def relu6(a):
    return Emit("hardtanh", [a.input], {"min_val": 0.0, "max_val": 6.0})


@rule("F.softplus", "input, beta=1.0, threshold=20.0", "softplus")
def softplus(a):
    return Emit("softplus", [a.input], {"beta": a.beta, "threshold": a.threshold})


def _clamp_plan(x, lo, hi, a):
    """clamp with numbers -> clamp attrs; with tensor bounds -> maximum/minimum nodes."""
    if not isinstance(lo, torch.Tensor) and not isinstance(hi, torch.Tensor):
        return Emit("clamp", [x], {"min": finite(lo, "min"), "max": finite(hi, "max")})
    steps, cur = [], x  # torch.clamp takes either two numbers or two tensors (None allowed)
    for op, bound, fn in (("maximum", lo, torch.maximum), ("minimum", hi, torch.minimum)):
        if bound is not None:
            nxt = a.meta(fn, cur, bound)
            steps.append(Emit(op, [cur, bound], {}, nxt))
            cur = nxt
    return steps[:-1] + [steps[-1]._replace(out=None)]


@rule("torch.clamp torch.clamp_ torch.clip torch.clip_ Tensor.clamp Tensor.clamp_ Tensor.clip Tensor.clip_",
      "input, min=None, max=None", "clamp maximum minimum")
def clamp(a):
    return _clamp_plan(a.input, a.min, a.max, a)


@rule("torch.clamp_min torch.clamp_min_ Tensor.clamp_min Tensor.clamp_min_", "input, min", "clamp maximum")
def clamp_min(a):
    return _clamp_plan(a.input, a.min, None, a)


@rule("torch.clamp_max torch.clamp_max_ Tensor.clamp_max Tensor.clamp_max_", "input, max", "clamp minimum")
def clamp_max(a):
    return _clamp_plan(a.input, None, a.max, a)


# ---------------------------------------------------------------- elementwise binary

def binary(op, x, y, reverse=False):
    """Two tensors -> inputs [x, y]; tensor and number -> scalar attr (reverse puts it first)."""
    if is_num(y) and isinstance(x, torch.Tensor):
        return Emit(op, [x, None], {"scalar": finite(y, "scalar"), "reverse": reverse})
    if is_num(x) and isinstance(y, torch.Tensor):
        return Emit(op, [y, None], {"scalar": finite(x, "scalar"), "reverse": not reverse})
    return Emit(op, [y, x] if reverse else [x, y], {})


def _scaled(a, other, alpha):
    """`other * alpha` as an intermediate for add/sub with alpha != 1."""
    if alpha == 1:
        return [], other
    if is_num(other):
        return [], other * alpha
    prod = a.meta(torch.mul, other, alpha)
    return [Emit("mul", [other, None], {"scalar": alpha, "reverse": False}, prod)], prod


def _add_sub(op, reverse=False):
    def norm(a):
        steps, other = _scaled(a, a.other, a.alpha)
        return steps + [binary(op, a.input, other, reverse)]
    return norm


rule("torch.add Tensor.add Tensor.add_ Tensor.__add__ Tensor.__radd__ Tensor.__iadd__",
     "input, other, *, alpha=1", "add mul")(_add_sub("add"))
rule("torch.sub torch.subtract Tensor.sub Tensor.sub_ Tensor.subtract Tensor.subtract_ Tensor.__sub__ Tensor.__isub__",
     "input, other, *, alpha=1", "sub mul")(_add_sub("sub"))


@rule("torch.rsub", "input, other, *, alpha=1", "sub mul")
def rsub(a):
    steps, inp = _scaled(a, a.input, a.alpha)
    return steps + [binary("sub", inp, a.other, reverse=True)]


@rule("Tensor.__rsub__", "input, other", "sub")
def rsub_dunder(a):
    return binary("sub", a.input, a.other, reverse=True)


@rule("torch.mul torch.multiply Tensor.mul Tensor.mul_ Tensor.multiply Tensor.multiply_ "
      "Tensor.__mul__ Tensor.__rmul__ Tensor.__imul__", "input, other", "mul")
def mul(a):
    return binary("mul", a.input, a.other)


@rule("torch.div torch.divide torch.true_divide Tensor.div Tensor.div_ Tensor.divide Tensor.divide_ "
      "Tensor.true_divide Tensor.true_divide_ Tensor.__truediv__ Tensor.__div__ Tensor.__itruediv__ Tensor.__idiv__",
      "input, other, *, rounding_mode=None", "div floor_divide trunc_divide")
def div(a):
    if a.rounding_mode is not None:
        return binary(_ROUNDED_DIV.get(a.rounding_mode) or _bad_rounding(a.rounding_mode), a.input, a.other)
    return binary("div", a.input, a.other)


_ROUNDED_DIV = {"floor": "floor_divide", "trunc": "trunc_divide"}


def _bad_rounding(mode):
    raise Unsupported(f"rounding_mode={mode!r} (floor and trunc are supported)")


@rule("Tensor.__rtruediv__ Tensor.__rdiv__", "input, other", "div")
def rdiv(a):
    return binary("div", a.input, a.other, reverse=True)


@rule("torch.floor_divide Tensor.floor_divide Tensor.floor_divide_ Tensor.__floordiv__ Tensor.__ifloordiv__",
      "input, other", "floor_divide")
def floor_divide(a):
    return binary("floor_divide", a.input, a.other)


@rule("Tensor.__rfloordiv__", "input, other", "floor_divide")
def rfloordiv(a):
    return binary("floor_divide", a.input, a.other, reverse=True)


@rule("torch.remainder Tensor.remainder Tensor.remainder_ Tensor.__mod__ Tensor.__imod__", "input, other",
      "remainder")
def remainder(a):
    return binary("remainder", a.input, a.other)


@rule("Tensor.__rmod__", "input, other", "remainder")
def rmod(a):
    return binary("remainder", a.input, a.other, reverse=True)


@rule("torch.fmod Tensor.fmod Tensor.fmod_", "input, other", "fmod")
def fmod(a):
    return binary("fmod", a.input, a.other)


_COMPARE = {
    "eq": "torch.eq Tensor.eq Tensor.__eq__",
    "ne": "torch.ne torch.not_equal Tensor.ne Tensor.not_equal Tensor.__ne__",
    "lt": "torch.lt torch.less Tensor.lt Tensor.less Tensor.__lt__",
    "le": "torch.le torch.less_equal Tensor.le Tensor.less_equal Tensor.__le__",
    "gt": "torch.gt torch.greater Tensor.gt Tensor.greater Tensor.__gt__",
    "ge": "torch.ge torch.greater_equal Tensor.ge Tensor.greater_equal Tensor.__ge__",
}


def _compare(op):
    def norm(a):
        return binary(op, a.input, a.other)
    return norm


for _op, _names in _COMPARE.items():
    rule(_names, "input, other", _op)(_compare(_op))


@rule("torch.maximum Tensor.maximum", "input, other", "maximum")
def maximum(a):
    return binary("maximum", a.input, a.other)


@rule("torch.minimum Tensor.minimum", "input, other", "minimum")
def minimum(a):
    return binary("minimum", a.input, a.other)


@rule("torch.pow Tensor.pow Tensor.pow_ Tensor.__pow__ Tensor.__ipow__", "input, exponent", "pow pow_scalar")
def pow_(a):
    if isinstance(a.input, torch.Tensor) and is_num(a.exponent):
        return Emit("pow_scalar", [a.input], {"exponent": finite(a.exponent, "exponent")})
    return binary("pow", a.input, a.exponent)


@rule("Tensor.__rpow__", "input, other", "pow")
def rpow(a):
    return binary("pow", a.input, a.other, reverse=True)


@rule("torch.square Tensor.square Tensor.square_", "input", "pow_scalar")
def square(a):
    return Emit("pow_scalar", [a.input], {"exponent": 2.0})


@rule("torch.where Tensor.where", "condition, input=None, other=None", "where")
def where(a):
    cond, x, y = a.condition, a.input, a.other
    if a.fname.startswith("Tensor."):  # x.where(cond, y) binds as condition=x, input=cond, other=y
        cond, x = x, cond
    if x is None:
        raise Unsupported("torch.where(condition) without values (data-dependent shape)")
    const = lambda v: Const(v, a.out.dtype) if is_num(v) else v
    return Emit("where", [cond, const(x), const(y)], {})


@rule("torch.masked_fill Tensor.masked_fill Tensor.masked_fill_", "input, mask, value", "where")
def masked_fill(a):
    value = Const(a.value, a.out.dtype) if is_num(a.value) else a.value
    return Emit("where", [a.mask, value, a.input], {})


# ---------------------------------------------------------------- logical ops

def _logical(op, a, *xs):
    """logical_* ops take any dtype (nonzero is true) and give bool; an in-place call keeps its input's dtype."""
    xs = [Const(bool(x), torch.bool) if is_num(x) else x for x in xs]
    if a.out.dtype == torch.bool:
        return Emit(op, xs, {})
    mid = a.meta(torch.empty, shape(a.out), dtype=torch.bool, device="meta")
    return [Emit(op, xs, {}, mid), Emit("cast", [mid], {"dtype": a.out.dtype})]


def _bitwise(op, logical, a, *xs):
    """Bitwise ops of bool tensors are the logical ops; of integer tensors the bit operations (a number
    operand becomes a 0-d constant of the tensor's dtype, as torch keeps that dtype)."""
    tensors = [x for x in xs if isinstance(x, torch.Tensor)]
    for x in tensors:
        if x.dtype.is_floating_point:
            raise Unsupported(f"bitwise operation on a {DTYPES.get(x.dtype, x.dtype)} tensor")
    if all(x.dtype == torch.bool for x in tensors) and logical is not None:
        return _logical(logical, a, *xs)
    dt = a.out.dtype
    return Emit(op, [Const(x, dt) if is_num(x) else x for x in xs], {})


@rule("torch.logical_not Tensor.logical_not Tensor.logical_not_", "input", "logical_not cast")
def logical_not(a):
    return _logical("logical_not", a, a.input)


@rule("torch.bitwise_not Tensor.bitwise_not Tensor.bitwise_not_ Tensor.__invert__", "input",
      "logical_not bitwise_not")
def bitwise_not(a):
    return _bitwise("bitwise_not", "logical_not", a, a.input)


def _logical_binary(op):
    def norm(a):
        return _logical(op, a, a.input, a.other)
    norm.__name__ = op
    return norm


def _bitwise_binary(op, logical):
    def norm(a):
        return _bitwise(op, logical, a, a.input, a.other)
    norm.__name__ = op
    return norm


rule("torch.logical_and Tensor.logical_and Tensor.logical_and_", "input, other", "logical_and cast")(
    _logical_binary("logical_and"))
rule("torch.logical_or Tensor.logical_or Tensor.logical_or_", "input, other", "logical_or cast")(
    _logical_binary("logical_or"))
rule("torch.bitwise_and Tensor.bitwise_and Tensor.bitwise_and_ Tensor.__and__ Tensor.__rand__ Tensor.__iand__",
     "input, other", "logical_and bitwise_and")(_bitwise_binary("bitwise_and", "logical_and"))
rule("torch.bitwise_or Tensor.bitwise_or Tensor.bitwise_or_ Tensor.__or__ Tensor.__ror__ Tensor.__ior__",
     "input, other", "logical_or bitwise_or")(_bitwise_binary("bitwise_or", "logical_or"))
rule("torch.bitwise_xor Tensor.bitwise_xor Tensor.bitwise_xor_ Tensor.__xor__ Tensor.__rxor__ Tensor.__ixor__",
     "input, other", "bitwise_xor full")(_bitwise_binary("bitwise_xor", None))


# ---------------------------------------------------------------- reductions

def _reduce(op):
    def norm(a):
        steps, x = _dtype_cast(a, a.input, getattr(a, "dtype", None))
        return steps + [Emit(op, [x], {"dims": dims(a.dim, a.input.dim()), "keepdim": a.keepdim})]
    norm.__name__ = op
    return norm


def _dtype_cast(a, x, dt):
    """An optional dtype= argument: cast the input first."""
    if dt is None or dt == x.dtype:
        return [], x
    y = a.meta(x.to, dt)
    return [Emit("cast", [x], {"dtype": dt}, y)], y


rule("torch.sum Tensor.sum", "input, dim=None, keepdim=False, *, dtype=None", "sum cast")(_reduce("sum"))
rule("torch.mean Tensor.mean", "input, dim=None, keepdim=False, *, dtype=None", "mean cast")(_reduce("mean"))
rule("torch.prod Tensor.prod", "input, dim=None, keepdim=False, *, dtype=None", "prod cast")(_reduce("prod"))
rule("torch.amax Tensor.amax", "input, dim=(), keepdim=False", "amax")(_reduce("amax"))
rule("torch.amin Tensor.amin", "input, dim=(), keepdim=False", "amin")(_reduce("amin"))
rule("torch.logsumexp Tensor.logsumexp torch.special.logsumexp", "input, dim, keepdim=False", "logsumexp")(
    _reduce("logsumexp"))


def _arg_reduce(op):
    def norm(a):
        d = None if a.dim is None else dim(a.dim, a.input.dim())
        return Emit(op, [a.input], {"dim": d, "keepdim": a.keepdim})
    norm.__name__ = op
    return norm


rule("torch.argmax Tensor.argmax", "input, dim=None, keepdim=False", "argmax")(_arg_reduce("argmax"))
rule("torch.argmin Tensor.argmin", "input, dim=None, keepdim=False", "argmin")(_arg_reduce("argmin"))


def _max_min(which):
    red, arg, elem = ("amax", "argmax", "maximum") if which == "max" else ("amin", "argmin", "minimum")

    def norm(a):
        x, rest, kw = a.input, list(a.args), dict(a.kwargs)
        if rest and isinstance(rest[0], torch.Tensor) or "other" in kw:
            return binary(elem, x, kw.get("other", rest[0] if rest else None))
        d = kw["dim"] if "dim" in kw else (rest.pop(0) if rest else None)
        keep = kw["keepdim"] if "keepdim" in kw else (rest.pop(0) if rest else False)
        if d is None:
            return Emit(red, [x], {"dims": [], "keepdim": False})
        values, indices = a.out
        d = dim(d, x.dim())
        return [Emit(red, [x], {"dims": [d], "keepdim": keep}, values),
                Emit(arg, [x], {"dim": d, "keepdim": keep}, indices)]
    norm.__name__ = which
    return norm


rule("torch.max Tensor.max", "input, *args, **kwargs", "amax argmax maximum")(_max_min("max"))
rule("torch.min Tensor.min", "input, *args, **kwargs", "amin argmin minimum")(_max_min("min"))


def norm_plan(a, x, p, dim_arg, keepdim, dtype):
    """A vector p-norm over some dims: the `norm` op for finite p > 0 ('fro' and None are 2); p = inf / -inf the
    largest / smallest |x| (abs, then amax / amin); p = 0 the count of nonzero elements, as torch's vector_norm."""
    steps, x = _dtype_cast(a, x, dtype)
    if p == "fro" or p is None:
        p = 2.0
    if isinstance(p, str) or p != p:
        raise Unsupported(f"norm p={p!r}")
    p, attrs = float(p), {"dims": dims(dim_arg, x.dim()), "keepdim": bool(keepdim)}
    if math.isfinite(p) and p != 0:
        return steps + [Emit("norm", [x], dict(attrs, p=p))]
    b, over, keep = _Steps(a), tuple(attrs["dims"]) or tuple(range(x.dim())), attrs["keepdim"]
    b.steps = steps
    if p == 0:
        hit = b.scalar("ne", x, 0)
        x = b("cast", [hit], {"dtype": x.dtype}, lambda t: t.to(x.dtype), hit)
        b("sum", [x], attrs, lambda t: torch.sum(t, dim=over, keepdim=keep), x)
        return b.done()
    mag = b("abs", [x], {}, torch.abs, x)
    pick = torch.amax if p > 0 else torch.amin
    b("amax" if p > 0 else "amin", [mag], attrs, lambda t: pick(t, dim=over, keepdim=keep), mag)
    return b.done()


@rule("torch.norm Tensor.norm", "input, p='fro', dim=None, keepdim=False, out=None, dtype=None",
      "norm cast abs amax amin ne sum")
def norm(a):
    return norm_plan(a, a.input, a.p, a.dim, a.keepdim, a.dtype)


@rule("torch.linalg.vector_norm", "input, ord=2, dim=None, keepdim=False, *, dtype=None",
      "norm cast abs amax amin ne sum")
def vector_norm(a):
    return norm_plan(a, a.input, a.ord, a.dim, a.keepdim, a.dtype)


@rule("torch.linalg.norm", "input, ord=None, dim=None, keepdim=False, *, dtype=None",
      "norm cast abs amax amin ne sum")
def linalg_norm(a):
    if a.ord is not None and (isinstance(a.dim, (list, tuple)) or a.dim is None and a.input.dim() >= 2):
        raise Unsupported("matrix norms (torch.linalg.norm with ord= over 2 dims)")
    return norm_plan(a, a.input, a.ord, a.dim, a.keepdim, a.dtype)


def _var_args(a):
    """var/std overloads: (x, dim, unbiased, keepdim), (x, unbiased), (x, dim=, correction=, keepdim=)."""
    rest, kw = list(a.args), dict(a.kwargs)
    d, unbiased, keep, corr = kw.pop("dim", None), kw.pop("unbiased", None), kw.pop("keepdim", False), kw.pop("correction", None)
    if rest and isinstance(rest[0], bool):
        unbiased = rest.pop(0)
    elif rest:
        d = rest.pop(0)
        if rest:
            unbiased = rest.pop(0)
        if rest:
            keep = rest.pop(0)
    if corr is None:
        corr = 0 if unbiased is False else 1
    return {"dims": dims(d, a.input.dim()), "keepdim": keep, "correction": int(corr)}


@rule("torch.var Tensor.var", "input, *args, **kwargs", "var")
def var(a):
    return Emit("var", [a.input], _var_args(a))


@rule("torch.std Tensor.std", "input, *args, **kwargs", "var sqrt")
def std(a):
    v = a.meta(torch.var, a.input, *a.args, **a.kwargs)
    return [Emit("var", [a.input], _var_args(a), v), Emit("sqrt", [v], {})]


# ---------------------------------------------------------------- softmax, normalization

def _softmax_dim(a):
    if a.dim is None:  # legacy implicit dim
        return 0 if a.input.dim() in (0, 1, 3) else 1
    return dim(a.dim, a.input.dim())


def _softmax(op):
    def norm(a):
        steps, x = _dtype_cast(a, a.input, a.dtype)
        return steps + [Emit(op, [x], {"dim": _softmax_dim(a)})]
    norm.__name__ = op
    return norm


rule("F.softmax", "input, dim=None, _stacklevel=3, dtype=None", "softmax cast")(_softmax("softmax"))
rule("torch.softmax Tensor.softmax torch.special.softmax", "input, dim=None, dtype=None", "softmax cast")(
    _softmax("softmax"))
rule("F.log_softmax", "input, dim=None, _stacklevel=3, dtype=None", "log_softmax cast")(_softmax("log_softmax"))
rule("torch.log_softmax Tensor.log_softmax torch.special.log_softmax", "input, dim=None, dtype=None",
     "log_softmax cast")(_softmax("log_softmax"))


@rule("F.batch_norm", "input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05",
      "batch_norm")
def batch_norm(a):
    return Emit("batch_norm", [a.input, a.weight, a.bias, a.running_mean, a.running_var],
                {"training": bool(a.training), "momentum": 0.0 if a.momentum is None else a.momentum, "eps": a.eps})


@rule("F.instance_norm", "input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, "
      "momentum=0.1, eps=1e-05", "instance_norm")
def instance_norm(a):
    return Emit("instance_norm", [a.input, a.weight, a.bias, a.running_mean, a.running_var],
                {"use_input_stats": bool(a.use_input_stats), "momentum": 0.1 if a.momentum is None else a.momentum,
                 "eps": a.eps})


@rule("F.group_norm", "input, num_groups, weight=None, bias=None, eps=1e-05", "group_norm")
def group_norm(a):
    return Emit("group_norm", [a.input, a.weight, a.bias], {"num_groups": a.num_groups, "eps": a.eps})


@rule("F.layer_norm", "input, normalized_shape, weight=None, bias=None, eps=1e-05", "layer_norm")
def layer_norm(a):
    return Emit("layer_norm", [a.input, a.weight, a.bias],
                {"normalized_shape": tup(a.normalized_shape, 1), "eps": a.eps})


@rule("F.normalize", "input, p=2.0, dim=1, eps=1e-12, out=None", "norm clamp div abs amax amin ne sum cast")
def normalize(a):
    x, d = a.input, dim(a.dim, a.input.dim())
    n = a.meta(torch.norm, x, a.p, d, True)
    c = a.meta(torch.clamp_min, n, a.eps)
    steps = norm_plan(a, x, a.p, d, True, None)
    return steps[:-1] + [steps[-1]._replace(out=n), Emit("clamp", [n], {"min": a.eps, "max": None}, c),
                         Emit("div", [x, c], {})]


# ---------------------------------------------------------------- contractions

@rule("torch.matmul Tensor.matmul Tensor.__matmul__ torch.mm Tensor.mm torch.bmm Tensor.bmm "
      "torch.mv Tensor.mv torch.dot Tensor.dot", "input, other", "matmul")
def matmul(a):
    return Emit("matmul", [a.input, a.other], {})


@rule("Tensor.__rmatmul__", "input, other", "matmul")
def rmatmul(a):
    return Emit("matmul", [a.other, a.input], {})


@rule("torch.addmm Tensor.addmm torch.baddbmm Tensor.baddbmm", "input, mat1, mat2, *, beta=1, alpha=1", "matmul add")
def addmm(a):
    if a.beta != 1 or a.alpha != 1:
        raise Unsupported(f"beta={a.beta}, alpha={a.alpha}")
    prod = a.meta(torch.matmul, a.mat1, a.mat2)
    return [Emit("matmul", [a.mat1, a.mat2], {}, prod), Emit("add", [prod, a.input], {})]


@rule("F.linear", "input, weight, bias=None", "linear")
def linear(a):
    return Emit("linear", [a.input, a.weight, a.bias], {})


@rule("F.bilinear torch.bilinear", "input1, input2, weight, bias=None", "einsum add")
def bilinear(a):
    """F.bilinear / nn.Bilinear: y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o] as two einsums (x1 W first,
    then the product with x2 summed over j), kforge's contraction op; torch's own _trilinear sums in another
    order (float32 last bits)."""
    x1, x2, w, b = a.input1, a.input2, a.weight, a.bias
    lead = "".join("abcdefgh"[d] for d in range(x1.dim() - 1))
    eq1, eq2 = f"{lead}i,oij->{lead}oj", f"{lead}oj,{lead}j->{lead}o"
    mid = a.meta(torch.einsum, eq1, x1, w)
    steps = [Emit("einsum", [x1, w], {"equation": eq1}, mid)]
    if b is None:
        return steps + [Emit("einsum", [mid, x2], {"equation": eq2})]
    y = a.meta(torch.einsum, eq2, mid, x2)
    return steps + [Emit("einsum", [mid, x2], {"equation": eq2}, y), Emit("add", [y, b], {})]


@rule("torch.einsum", "equation, *operands", "einsum")
def einsum(a):
    ops = seq_arg(a.operands)
    return Emit("einsum", ops, {"equation": a.equation.replace(" ", "")})


def _conv_padding(padding, weight, dilation, r):
    if padding == "valid":
        return [0] * r
    if padding == "same":
        pads = []
        for k, d in zip(weight.shape[2:], dilation):
            total = d * (int(k) - 1)
            if total % 2:
                raise Unsupported(f"padding='same' with kernel {int(k)}, dilation {d} (asymmetric padding)")
            pads.append(total // 2)
        return pads
    return tup(padding, r)


@rule("torch.conv1d torch.conv2d torch.conv3d F.conv1d F.conv2d F.conv3d",
      "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", "conv")
def conv(a):
    r = a.weight.dim() - 2
    dil = tup(a.dilation, r)
    return Emit("conv", [a.input, a.weight, a.bias],
                {"stride": tup(a.stride, r), "padding": _conv_padding(a.padding, a.weight, dil, r),
                 "dilation": dil, "groups": a.groups})


@rule("torch.conv_transpose1d torch.conv_transpose2d torch.conv_transpose3d "
      "F.conv_transpose1d F.conv_transpose2d F.conv_transpose3d",
      "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1", "conv_transpose")
def conv_transpose(a):
    r = a.weight.dim() - 2
    return Emit("conv_transpose", [a.input, a.weight, a.bias],
                {"stride": tup(a.stride, r), "padding": tup(a.padding, r), "output_padding": tup(a.output_padding, r),
                 "dilation": tup(a.dilation, r), "groups": a.groups})


def sdpa_polyfill(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """torch 2 F.scaled_dot_product_attention, for torch 1.x tracing (installed only while importing)."""
    from torch.overrides import has_torch_function, handle_torch_function
    if has_torch_function((query, key, value)):
        return handle_torch_function(sdpa_polyfill, (query, key, value), query, key, value, attn_mask=attn_mask,
                                     dropout_p=dropout_p, is_causal=is_causal, scale=scale)
    s = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    attn = torch.matmul(query, key.transpose(-2, -1)) * s
    if is_causal:
        keep = torch.ones(query.size(-2), key.size(-2), dtype=torch.bool, device=query.device).tril()
        attn = attn.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        attn = attn.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else attn + attn_mask
    attn = torch.softmax(attn, dim=-1)
    if dropout_p > 0:
        attn = F.dropout(attn, dropout_p)
    return torch.matmul(attn, value)


@rule("F.scaled_dot_product_attention", "query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, "
      "scale=None, **extra", "scaled_dot_product_attention",
      objs=[("F.scaled_dot_product_attention", sdpa_polyfill)])
def scaled_dot_product_attention(a):
    if a.dropout_p:
        raise Unsupported(f"dropout_p={a.dropout_p}")
    no_extra(a)
    return Emit("scaled_dot_product_attention", [a.query, a.key, a.value, a.attn_mask],
                {"is_causal": bool(a.is_causal), "scale": a.scale})


# ---------------------------------------------------------------- pooling

def _rank_of(fname, x):
    digit = [c for c in fname if c.isdigit()]
    return int(digit[-1]) if digit else x.dim() - 2


def _max_pool3d_meta(a):
    """torch 1.13 has no meta kernel for max_pool3d: compute the output shape ourselves."""
    x, r = a.input, 3
    k, p, d = tup(a.kernel_size, r), tup(a.padding, r), tup(a.dilation, r)
    s = tup(a.stride, r) if a.stride not in (None, [], ()) else k
    out = []
    for L, kk, ss, pp, dd in zip(x.shape[-r:], k, s, p, d):
        num = int(L) + 2 * pp - dd * (kk - 1) - 1
        o = (-(-num // ss) if a.ceil_mode else num // ss) + 1
        if a.ceil_mode and (o - 1) * ss >= int(L) + pp:
            o -= 1
        out.append(o)
    return torch.empty(list(x.shape[:-r]) + out, dtype=x.dtype, device="meta")


def max_pool_indices_plan(b, x, k, s, p, d, ceil_mode, values_shape):
    """The indices F.max_pool2d(return_indices=True) returns (each window's maximum as a flat h * W + w of the
    input plane), from ops: x padded with -inf, its windows as two unfold views, argmax over each window's
    kh * kw (the first maximum, as torch's kernel takes it; a window with NaN: torch keeps its last NaN, this its
    first), that position's row and column offsets added to the window's origin (ho * sh - ph, wo * sw - pw, from
    cumulative sums of ones). 2-d only, dilation 1, and windows that lie inside the padded input (ceil_mode
    only where it adds no window)."""
    if x.dim() not in (3, 4) or len(k) != 2:
        raise Unsupported("return_indices=True of a pool other than 2-d")
    if any(v != 1 for v in d):
        raise Unsupported("return_indices=True with dilation")
    h, w = int(x.shape[-2]), int(x.shape[-1])
    ho, wo = values_shape[-2:]
    if (ho - 1) * s[0] + k[0] > h + 2 * p[0] or (wo - 1) * s[1] + k[1] > w + 2 * p[1]:
        raise Unsupported("return_indices=True where ceil_mode adds a window past the padded input")
    i64, cur = torch.int64, x
    if p[0] or p[1]:
        pads = [p[1], p[1], p[0], p[0]]
        cur = b("constant_pad", [cur], {"pad": pads, "value": "-inf"},
                lambda t: F.pad(t, pads, value=-math.inf), cur)
    rank = cur.dim()
    cur = b("unfold", [cur], {"dim": rank - 2, "size": k[0], "step": s[0]}, lambda t: t.unfold(rank - 2, k[0], s[0]),
            cur)
    cur = b("unfold", [cur], {"dim": rank - 1, "size": k[1], "step": s[1]}, lambda t: t.unfold(rank - 1, k[1], s[1]),
            cur)
    flat_shape = shape(cur)[:rank] + [k[0] * k[1]]
    cur = b("reshape", [cur], {"shape": flat_shape}, torch.reshape, cur, flat_shape)
    arg = b("argmax", [cur], {"dim": rank, "keepdim": False}, lambda t: torch.argmax(t, rank), cur)
    dh = b.scalar("floor_divide", arg, k[1])
    dw = b.scalar("remainder", arg, k[1])

    def origins(n, stride, pad, view):  # (i * stride - pad) for i < n, shaped to broadcast along its dim
        o = b.scalar("mul", b.counting(n, i64), stride)  # (i + 1) * stride
        o = b.scalar("sub", o, stride + pad)
        return b("reshape", [o], {"shape": view}, torch.reshape, o, view)

    top, left = origins(ho, s[0], p[0], [ho, 1]), origins(wo, s[1], p[1], [1, wo])
    rows = b("add", [dh, top], {}, torch.add, dh, top)
    cols = b("add", [dw, left], {}, torch.add, dw, left)
    rows_w = b.scalar("mul", rows, w)
    return b("add", [rows_w, cols], {}, torch.add, rows_w, cols)


def _max_pool(a):
    r = _rank_of(a.fname, a.input)
    k = tup(a.kernel_size, r)
    attrs = {"kernel_size": k, "stride": tup(a.stride, r) if a.stride not in (None, [], ()) else k,
             "padding": tup(a.padding, r), "dilation": tup(a.dilation, r), "ceil_mode": bool(a.ceil_mode)}
    if not a.return_indices:
        return Emit("max_pool", [a.input], attrs)
    values, indices = a.out
    b = _Steps(a)
    b.steps.append(Emit("max_pool", [a.input], attrs, values))
    max_pool_indices_plan(b, a.input, k, attrs["stride"], attrs["padding"], attrs["dilation"], attrs["ceil_mode"],
                          shape(values))
    return b.done(indices)


_MAXPOOL_SIG = "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False"
rule("F.max_pool1d F.max_pool2d torch.max_pool1d torch.max_pool2d", _MAXPOOL_SIG,
     "max_pool constant_pad unfold reshape argmax floor_divide remainder full cumsum mul sub add")(_max_pool)
rule("F.max_pool3d torch.max_pool3d", _MAXPOOL_SIG, "max_pool", fallback=_max_pool3d_meta)(_max_pool)


@rule("F.avg_pool1d F.avg_pool2d F.avg_pool3d torch.avg_pool1d",
      "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None",
      "avg_pool")
def avg_pool(a):
    r = _rank_of(a.fname, a.input)
    k = tup(a.kernel_size, r)
    return Emit("avg_pool", [a.input], {
        "kernel_size": k, "stride": tup(a.stride, r) if a.stride not in (None, [], ()) else k,
        "padding": tup(a.padding, r), "ceil_mode": bool(a.ceil_mode),
        "count_include_pad": bool(a.count_include_pad), "divisor_override": a.divisor_override})


def _adaptive(op):
    def norm(a):
        if getattr(a, "return_indices", False):
            raise Unsupported("return_indices=True")
        r = _rank_of(a.fname, a.input)
        return Emit(op, [a.input], {"output_size": shape(a.out)[-r:]})
    norm.__name__ = op
    return norm


rule("F.adaptive_avg_pool1d F.adaptive_avg_pool2d F.adaptive_avg_pool3d torch.adaptive_avg_pool1d",
     "input, output_size", "adaptive_avg_pool")(_adaptive("adaptive_avg_pool"))
rule("F.adaptive_max_pool1d F.adaptive_max_pool2d F.adaptive_max_pool3d",
     "input, output_size, return_indices=False", "adaptive_max_pool")(_adaptive("adaptive_max_pool"))


# ---------------------------------------------------------------- scans

@rule("torch.cumsum Tensor.cumsum Tensor.cumsum_", "input, dim, *, dtype=None", "cumsum cast")
def cumsum(a):
    steps, x = _dtype_cast(a, a.input, a.dtype)
    return steps + [Emit("cumsum", [x], {"dim": dim(a.dim, x.dim())})]


@rule("torch.cumprod Tensor.cumprod Tensor.cumprod_", "input, dim, *, dtype=None", "cumprod cast")
def cumprod(a):
    steps, x = _dtype_cast(a, a.input, a.dtype)
    return steps + [Emit("cumprod", [x], {"dim": dim(a.dim, x.dim())})]


@rule("torch.logcumsumexp Tensor.logcumsumexp Tensor.logcumsumexp_ torch.special.logcumsumexp", "input, dim",
      "logcumsumexp")
def logcumsumexp(a):
    if not a.input.dtype.is_floating_point:
        raise Unsupported(f"logcumsumexp of a {a.input.dtype} tensor (torch takes floating tensors only)")
    return Emit("logcumsumexp", [a.input], {"dim": dim(a.dim, a.input.dim())})


# ---------------------------------------------------------------- losses

@rule("F.cross_entropy", "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, "
      "reduction='mean', label_smoothing=0.0", "cross_entropy")
def cross_entropy(a):
    if a.weight is not None:
        raise Unsupported("cross_entropy with weight=")
    return Emit("cross_entropy", [a.input, a.target], {
        "reduction": reduction(a), "ignore_index": a.ignore_index, "label_smoothing": a.label_smoothing})


def _simple_loss(op):
    def norm(a):
        no_extra(a)
        return Emit(op, [a.input, a.target], {"reduction": reduction(a)})
    norm.__name__ = op
    return norm


rule("F.mse_loss", "input, target, size_average=None, reduce=None, reduction='mean', **extra", "mse_loss")(
    _simple_loss("mse_loss"))
rule("F.l1_loss", "input, target, size_average=None, reduce=None, reduction='mean', **extra", "l1_loss")(
    _simple_loss("l1_loss"))


@rule("F.smooth_l1_loss", "input, target, size_average=None, reduce=None, reduction='mean', beta=1.0, **extra",
      "smooth_l1_loss")
def smooth_l1_loss(a):
    no_extra(a)
    return Emit("smooth_l1_loss", [a.input, a.target], {"reduction": reduction(a), "beta": a.beta})


@rule("F.huber_loss", "input, target, reduction='mean', delta=1.0, **extra", "huber_loss")
def huber_loss(a):
    no_extra(a)
    return Emit("huber_loss", [a.input, a.target], {"reduction": a.reduction, "delta": a.delta})


@rule("F.kl_div", "input, target, size_average=None, reduce=None, reduction='mean', log_target=False", "kl_div")
def kl_div(a):
    return Emit("kl_div", [a.input, a.target], {"reduction": reduction(a), "log_target": bool(a.log_target)})


@rule("torch.cosine_embedding_loss F.cosine_embedding_loss",
      "input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction='mean'",
      "mul sum add sqrt div sub clamp eq where mean")
def cosine_embedding_loss(a):
    """torch's formula: cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12) (sum(x2^2) + 1e-12)) over the last dim; the
    loss is 1 - cos where the target is 1, max(cos - margin, 0) where it is -1, 0 elsewhere; then the reduction."""
    x1, x2, y = a.input1, a.input2, a.target
    red = reduction(a)
    if red not in ("mean", "sum", "none"):
        raise UserError(f"cosine_embedding_loss: reduction '{red}' is not one of 'none', 'mean', 'sum'")
    last = [x1.dim() - 1]
    emit = _Steps(a)

    def summed(u, v):
        p = emit("mul", [u, v], {}, torch.mul, u, v)
        return emit("sum", [p], {"dims": last, "keepdim": False}, lambda t: t.sum(last[0]), p)

    prod = summed(x1, x2)
    scalar = emit.scalar
    sq1 = scalar("add", summed(x1, x1), 1e-12)
    sq2 = scalar("add", summed(x2, x2), 1e-12)
    both = emit("mul", [sq1, sq2], {}, torch.mul, sq1, sq2)
    denom = emit("sqrt", [both], {}, torch.sqrt, both)
    cos = emit("div", [prod, denom], {}, torch.div, prod, denom)
    pos = scalar("sub", cos, 1.0, reverse=True)
    shifted = scalar("sub", cos, float(a.margin))
    neg = emit("clamp", [shifted], {"min": 0.0, "max": None}, torch.clamp_min, shifted, 0.0)
    zero = Const(0.0, cos.dtype)
    is_pos = scalar("eq", y, 1)
    is_neg = scalar("eq", y, -1)
    out_pos = emit("where", [is_pos, pos, zero], {}, lambda c, p: torch.where(c, p, 0.0), is_pos, pos)
    out_neg = emit("where", [is_neg, neg, zero], {}, lambda c, n: torch.where(c, n, 0.0), is_neg, neg)
    loss = emit("add", [out_pos, out_neg], {}, torch.add, out_pos, out_neg)
    if red == "none":
        return emit.done()
    return emit.steps + [Emit(red, [loss], {"dims": [], "keepdim": False})]


def _gaussian_nll_meta(a):
    """The loss's shape and dtype without torch's own call, whose variance check reads values (.item())."""
    x = a.input
    dtype = torch.promote_types(torch.promote_types(x.dtype, a.target.dtype), a.var.dtype)
    return torch.empty(shape(x) if a.reduction == "none" else [], dtype=dtype, device="meta")


@rule("F.gaussian_nll_loss", "input, target, var, full=False, eps=1e-06, reduction='mean'",
      "reshape clamp log sub mul div add mean sum", run=_gaussian_nll_meta)
def gaussian_nll_loss(a):
    """0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) when full), then the
    reduction, as torch's. Its check that no variance is negative (a ValueError, decided by the values) is not
    made: a model that runs in torch never has one."""
    x, t, v = a.input, a.target, a.var
    if a.reduction not in ("mean", "sum", "none"):
        raise UserError(f"gaussian_nll_loss: reduction '{a.reduction}' is not one of 'none', 'mean', 'sum'")
    b = _Steps(a)
    if shape(v) != shape(x) and shape(x)[:-1] == shape(v):  # one variance per row: a trailing dim of 1
        v = b("reshape", [v], {"shape": shape(v) + [1]}, torch.unsqueeze, v, -1)
    elif shape(v) != shape(x) and not (shape(x)[:-1] == shape(v)[:-1] and shape(v)[-1:] == [1]):
        raise UserError(f"gaussian_nll_loss: var of shape {shape(v)} fits neither input {shape(x)} nor its rows")
    c = b("clamp", [v], {"min": a.eps, "max": None}, torch.clamp_min, v, a.eps)
    lg = b("log", [c], {}, torch.log, c)
    d = b("sub", [x, t], {}, torch.sub, x, t)
    d2 = b("mul", [d, d], {}, torch.mul, d, d)
    q = b("div", [d2, c], {}, torch.div, d2, c)
    h = b("add", [lg, q], {}, torch.add, lg, q)
    h = b.scalar("mul", h, 0.5)
    if a.full:
        const = 0.5 * math.log(2 * math.pi)
        h = b.scalar("add", h, const)
    if a.reduction == "none":
        return b.done()
    return b.steps + [Emit(a.reduction, [h], {"dims": [], "keepdim": False})]


@rule("F.triplet_margin_loss", "anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, "
      "size_average=None, reduce=None, reduction='mean'", "triplet_margin_loss")
def triplet_margin_loss(a):
    return Emit("triplet_margin_loss", [a.anchor, a.positive, a.negative], {
        "margin": a.margin, "p": a.p, "eps": a.eps, "swap": bool(a.swap), "reduction": reduction(a)})


# ---------------------------------------------------------------- dropout and value-preserving calls

@rule("F.dropout torch.dropout", "input, p=0.5, training=True, inplace=False", "dropout")
def dropout(a):
    if not a.training or a.p == 0:
        return Alias(a.input)
    return Emit("dropout", [a.input], {"p": a.p, "training": True})


@rule("F.dropout1d F.dropout2d F.dropout3d F.alpha_dropout F.feature_alpha_dropout",
      "input, p=0.5, training=True, inplace=False", "")
def channel_dropout(a):
    if not a.training or a.p == 0:
        return Alias(a.input)
    raise Unsupported("channel/alpha dropout in train mode")


@rule("Tensor.contiguous Tensor.clone torch.clone Tensor.detach torch.detach Tensor.detach_ Tensor.data.__get__ "
      "Tensor.requires_grad_ Tensor.__deepcopy__", "input, *args, **kwargs", "")
def same_value(a):
    return Alias(a.input)


def _moved(a):
    return a.meta(a.input.detach)


@rule("Tensor.cuda Tensor.cpu", "input, *args, **kwargs", "", run=_moved)
def device_move(a):
    return Alias(a.input)


# ---------------------------------------------------------------- casts

def _cast(x, dt):
    if dt == x.dtype:
        return Alias(x)
    return Emit("cast", [x], {"dtype": dt})


_CAST_METHODS = {"float": torch.float32, "double": torch.float64, "half": torch.float16, "bfloat16": torch.bfloat16,
                 "int": torch.int32, "long": torch.int64, "bool": torch.bool, "byte": torch.uint8, "char": torch.int8}
for _m, _dt in _CAST_METHODS.items():
    rule(f"Tensor.{_m}", "input, memory_format=None", "cast")(lambda a, _dt=_dt: _cast(a.input, _dt))


def _to_dtype(a):
    """Tensor.to(dtype) / to(device) / to(device, dtype) / to(other) / to(dtype=...) -> target dtype or None."""
    dt = a.kwargs.get("dtype")
    for v in a.args:
        if isinstance(v, torch.dtype):
            dt = v
        elif isinstance(v, torch.Tensor):
            dt = v.dtype
    return dt


def _run_to(a):
    dt = _to_dtype(a)
    return a.meta(a.input.to, dt) if dt is not None else a.meta(a.input.detach)


@rule("Tensor.to", "input, *args, **kwargs", "cast", run=_run_to)
def to(a):
    dt = _to_dtype(a)
    return Alias(a.input) if dt is None else _cast(a.input, dt)


@rule("Tensor.type_as", "input, other", "cast")
def type_as(a):
    return _cast(a.input, a.other.dtype)


@rule("Tensor.type", "input, dtype=None, non_blocking=False, **kwargs", "cast")
def type_(a):
    if not isinstance(a.dtype, torch.dtype):
        raise Unsupported("Tensor.type() without a torch.dtype")
    return _cast(a.input, a.dtype)


# ---------------------------------------------------------------- layout

@rule("Tensor.view Tensor.reshape torch.reshape Tensor.view_as Tensor.reshape_as Tensor.flatten torch.flatten "
      "Tensor.squeeze Tensor.squeeze_ torch.squeeze Tensor.unsqueeze Tensor.unsqueeze_ torch.unsqueeze "
      "Tensor.unflatten torch.unflatten torch.ravel Tensor.ravel", "input, *args, **kwargs", "reshape")
def reshape(a):
    if a.args and isinstance(a.args[0], torch.dtype):
        raise Unsupported("Tensor.view(dtype) (bit reinterpretation)")
    if shape(a.out) == shape(a.input):
        return Alias(a.input)
    return Emit("reshape", [a.input], {"shape": shape(a.out)})


def _permute(x, perm):
    perm = [dim(d, x.dim()) for d in perm]
    if perm == list(range(x.dim())):
        return Alias(x)
    return Emit("permute", [x], {"dims": perm})


@rule("Tensor.permute torch.permute", "input, *dims", "permute")
def permute(a):
    return _permute(a.input, seq_arg(a.dims))


@rule("Tensor.transpose Tensor.transpose_ torch.transpose Tensor.swapaxes torch.swapaxes Tensor.swapdims torch.swapdims",
      "input, dim0, dim1", "permute")
def transpose(a):
    n = a.input.dim()
    perm = list(range(n))
    d0, d1 = dim(a.dim0, n), dim(a.dim1, n)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return _permute(a.input, perm)


@rule("Tensor.t Tensor.t_ torch.t Tensor.T.__get__", "input", "permute")
def t(a):
    return _permute(a.input, list(reversed(range(a.input.dim()))))


@rule("Tensor.mT.__get__", "input", "permute")
def mT(a):
    n = a.input.dim()
    return _permute(a.input, list(range(n - 2)) + [n - 1, n - 2])


@rule("Tensor.expand Tensor.expand_as torch.broadcast_to Tensor.broadcast_to", "input, *args, **kwargs", "expand")
def expand(a):
    if shape(a.out) == shape(a.input):
        return Alias(a.input)
    return Emit("expand", [a.input], {"shape": shape(a.out)})


@rule("Tensor.narrow torch.narrow", "input, dim, start, length", "slice")
def narrow(a):
    d = dim(a.dim, a.input.dim())
    size = int(a.input.shape[d])
    start = int(a.start) + size if int(a.start) < 0 else int(a.start)
    if start == 0 and int(a.length) == size:
        return Alias(a.input)
    return Emit("slice", [a.input], {"dim": d, "start": start, "end": start + int(a.length), "step": 1})


@rule("Tensor.select torch.select", "input, dim, index", "select")
def select(a):
    d = dim(a.dim, a.input.dim())
    i = int(a.index)
    return Emit("select", [a.input], {"dim": d, "index": i + int(a.input.shape[d]) if i < 0 else i})


_GETITEM, _SETITEM = torch.Tensor.__getitem__, torch.Tensor.__setitem__


def _dispatched(func, self, index, *rest):
    """torch 1.13 does not call __torch_function__ for an index that holds a tensor: ask for it here."""
    from torch.overrides import handle_torch_function, has_torch_function
    if any(isinstance(i, torch.Tensor) for i in index) and has_torch_function((self,)):
        return True, handle_torch_function(func, (self,), self, index, *rest)
    return False, None


def tensor_getitem(self, index):
    """Installed as Tensor.__getitem__ while importing: torch 1.13 skips __torch_function__ for x[i]."""
    index = index if isinstance(index, tuple) else (index,)
    done, out = _dispatched(tensor_getitem, self, index)
    return out if done else _GETITEM(self, index)


def tensor_setitem(self, index, value):
    index = index if isinstance(index, tuple) else (index,)
    done, out = _dispatched(tensor_setitem, self, index, value)
    return out if done else _SETITEM(self, index, value)


tensor_setitem.__name__ = "__setitem__"  # so the tracer sees an in-place call
NAMES[tensor_setitem] = "Tensor.__setitem__"


def _from_the_end(b, index, size):
    """An index tensor with its negative entries counted from the end of a dim of `size`, as torch's indexing
    counts them (index_select alone does not)."""
    neg = b.scalar("lt", index, 0)
    up = b.scalar("add", index, size)
    return b("where", [neg, up, index], {}, torch.where, neg, up, index)


def _index_select_plan(a, x, idx):
    """x[..., index, ...] with one integer index tensor and full slices elsewhere -> index_select (+ reshapes) of
    the index with its negative entries counted from the end."""
    k = next(i for i, item in enumerate(idx) if isinstance(item, torch.Tensor))
    index, others = idx[k], idx[:k] + idx[k + 1:]
    if (index.dtype not in (torch.int64, torch.int32) or others.count(Ellipsis) > 1
            or any(o is not Ellipsis and o != slice(None) for o in others)):
        raise Unsupported("advanced indexing other than one integer index tensor among full slices")
    d = x.dim() - len(idx) + k if Ellipsis in idx[:k] else k
    b, size = _Steps(a), int(x.shape[d])
    index = _from_the_end(b, index, size)
    if index.dim() == 1:
        b("index_select", [x, index], {"dim": d}, torch.index_select, x, d, index)
        return b.done()
    flat = b("reshape", [index], {"shape": [index.numel()]}, torch.reshape, index, [index.numel()])
    picked = b("index_select", [x, flat], {"dim": d}, torch.index_select, x, d, flat)
    b("reshape", [picked], {"shape": shape(a.out)}, torch.reshape, picked, shape(a.out))
    return b.done()


def _linear_index(b, x, idx, write=False):
    """The shared part of reads and writes through integer index tensors (torch's, NumPy's advanced indexing;
    ints among them count as 0-d index tensors): the basic slices taken (a write allows only full ones), the
    indexed dims moved to the front when slices separate them, and one linear int64 index into the block of the
    indexed dims: each index, negative ones wrapped, times its dim's stride in the block, all broadcast together;
    an entry outside its dim makes it `total`, out of range, so the kernel that uses it traps as torch raises.
    Returns (cur, perm, pos, m, lin, total): cur is x sliced and permuted (by perm, or None), its dims
    pos .. pos + m - 1 the indexed ones. Boolean masks and None among index tensors are refused."""
    if any(item is None for item in idx):
        raise Unsupported("advanced indexing with None among index tensors")
    for item in idx:
        if isinstance(item, torch.Tensor) and (item.dtype == torch.bool or item.dtype == torch.uint8):
            raise Unsupported("a boolean mask index (the result's shape depends on the mask's values; "
                              "torch.where(mask, x, other) keeps the shape)")
        if isinstance(item, torch.Tensor) and item.dtype not in (torch.int64, torch.int32):
            raise Unsupported(f"an index tensor of {item.dtype}")
        if not (isinstance(item, (torch.Tensor, slice)) or item is Ellipsis or hasattr(item, "__index__")) \
                or isinstance(item, bool):
            raise Unsupported(f"advanced indexing with {type(item).__name__}")
    consumed = sum(1 for item in idx if item is not Ellipsis)
    items = []
    for item in idx:
        items += [slice(None)] * (x.dim() - consumed) if item is Ellipsis else [item]
    items += [slice(None)] * (x.dim() - len(items))
    cur, i64, perm = x, torch.int64, None
    for d, item in enumerate(items):  # the basic slices first: each keeps its dim
        if isinstance(item, slice):
            size = int(cur.shape[d])
            start, stop, step = item.indices(size)
            if (start, stop, step) != (0, size, 1):
                if write:
                    raise Unsupported("a write through index tensors beside a partial slice")
                cur = b("slice", [cur], {"dim": d, "start": start, "end": max(stop, start), "step": step},
                        lambda t, d=d, item=item: t[(slice(None),) * d + (item,)], cur)
    adv = [d for d, item in enumerate(items) if not isinstance(item, slice)]
    if adv != list(range(adv[0], adv[-1] + 1)):  # separated by slices: the indexed dims go first
        perm = adv + [d for d in range(cur.dim()) if d not in adv]
        cur = b("permute", [cur], {"dims": perm}, lambda t: t.permute(perm), cur)
        items, pos = [items[d] for d in perm], 0
    else:
        pos = adv[0]
    m = len(adv)
    sizes = [int(cur.shape[pos + j]) for j in range(m)]
    total, stride, offset, lin, valid = math.prod(sizes), 1, 0, None, None
    for j in reversed(range(m)):
        item, size = items[pos + j], sizes[j]
        if not isinstance(item, torch.Tensor):
            v = int(item.__index__())
            if not -size <= v < size:
                raise Unsupported(f"index {v} is out of range for a dim of {size}")
            offset += (v + size if v < 0 else v) * stride
        else:
            t = item if item.dtype == i64 else b("cast", [item], {"dtype": i64}, lambda u: u.to(i64), item)
            t = _from_the_end(b, t, size)
            low = b.scalar("ge", t, 0)
            high = b.scalar("lt", t, size)
            ok = b("logical_and", [low, high], {}, torch.logical_and, low, high)
            valid = ok if valid is None else b("logical_and", [valid, ok], {}, torch.logical_and, valid, ok)
            if stride != 1:
                t = b.scalar("mul", t, stride)
            lin = t if lin is None else b("add", [lin, t], {}, torch.add, lin, t)
        stride *= size
    if offset:
        lin = b.scalar("add", lin, offset)
    lin = b("where", [valid, lin, Const(total, i64)], {}, lambda ok, u: torch.where(ok, u, total), valid, lin)
    return cur, perm, pos, m, lin, total


def _merged_block(b, cur, pos, m, total):
    """cur with its dims pos .. pos + m - 1 merged into one of `total`."""
    block = shape(cur)[:pos] + [total] + shape(cur)[pos + m:]
    return b("reshape", [cur], {"shape": block}, torch.reshape, cur, block)


def _advanced_index_plan(a, x, idx):
    """x[...] with integer index tensors and slices (_linear_index) as one index_select of the linear index from
    x's indexed dims merged into one; the result has the index shape where the indexed dims were (first, when
    slices separated them, as torch's)."""
    b = _Steps(a)
    cur, _, pos, m, lin, total = _linear_index(b, x, idx)
    before, after, index_shape = shape(cur)[:pos], shape(cur)[pos + m:], shape(lin)
    block = _merged_block(b, cur, pos, m, total)
    n = math.prod(index_shape)
    flat = b("reshape", [lin], {"shape": [n]}, torch.reshape, lin, [n])
    picked = b("index_select", [block, flat], {"dim": pos}, torch.index_select, block, pos, flat)
    result = before + index_shape + after
    b("reshape", [picked], {"shape": result}, torch.reshape, picked, result)
    return b.done()


class _MetaOnly:
    """What _Steps needs of a rule's arguments when a plan has only the meta runner (write_plan's callers)."""

    def __init__(self, meta):
        self.meta = meta


def _indexed_write_plan(x, idx, value, meta, target, accumulate=False):
    """x[index tensors] = value (torch's index_put; with accumulate a scatter_add): the same linear index as a read
    (_linear_index; full slices only beside the index tensors), expanded over the dims after the indexed block,
    and a scatter of the value (broadcast to what the read would give, cast to x's dtype) into x's indexed dims
    merged into one; then back to x's shape (and dim order). With a repeated index one of the writes wins,
    unspecified, as torch's."""
    b = _Steps(_MetaOnly(meta))
    cur, perm, pos, m, lin, total = _linear_index(b, x, idx, write=True)
    before, after, index_shape = shape(cur)[:pos], shape(cur)[pos + m:], shape(lin)
    n = math.prod(index_shape)
    block = _merged_block(b, cur, pos, m, total)
    read_shape = before + index_shape + after
    if is_num(value):
        v = b("full", [], {"shape": read_shape, "value": finite(value, "value"), "dtype": x.dtype}, torch.full,
              read_shape, value, dtype=x.dtype, device="meta")
    else:
        if value.dtype != x.dtype:
            value = b("cast", [value], {"dtype": x.dtype}, lambda u: u.to(x.dtype), value)
        if shape(value) != read_shape:
            value = b("expand", [value], {"shape": read_shape}, lambda u: u.expand(read_shape), value)
        v = value
    src_shape = before + [n] + after
    src = b("reshape", [v], {"shape": src_shape}, torch.reshape, v, src_shape)
    lin_shape = [1] * len(before) + [n] + [1] * len(after)
    where = b("reshape", [lin], {"shape": lin_shape}, torch.reshape, lin, lin_shape)
    where = b("expand", [where], {"shape": src_shape}, lambda u: u.expand(src_shape), where)
    op = "scatter_add" if accumulate else "scatter"
    put = b(op, [block, where, src], {"dim": pos}, getattr(torch, op), block, pos, where, src)
    out = b("reshape", [put], {"shape": shape(cur)}, torch.reshape, put, shape(cur))
    if perm is not None:
        back = [perm.index(d) for d in range(len(perm))]
        out = b("permute", [out], {"dims": back}, lambda u: u.permute(back), out)
    return b.done(target)


@rule("Tensor.__getitem__", "input, index",
      "select slice reshape index_select permute cast lt ge add mul where logical_and",
      objs=[("Tensor.__getitem__", tensor_getitem)])
def getitem(a):
    """Basic indexing (ints, slices, None, ...) -> a chain of select/slice/reshape nodes; one integer index
    tensor among full slices -> index_select; any other integer index tensors -> _advanced_index_plan."""
    x = a.input
    idx = a.index if isinstance(a.index, tuple) else (a.index,)
    tensors = sum(isinstance(item, torch.Tensor) for item in idx)
    if tensors == 1 and not any(item is None for item in idx):
        try:
            return _index_select_plan(a, x, idx)
        except Unsupported:
            return _advanced_index_plan(a, x, idx)
    if tensors:
        return _advanced_index_plan(a, x, idx)
    for item in idx:
        if isinstance(item, (torch.Tensor, list, bool)) or not (
                item is None or item is Ellipsis or isinstance(item, slice) or hasattr(item, "__index__")):
            raise Unsupported(f"advanced indexing with {type(item).__name__} (only ints, slices, None and ... are supported)")
    consumed = sum(1 for i in idx if i is not None and i is not Ellipsis)
    steps, cur, d = [], x, 0
    for item in idx:
        if item is Ellipsis:
            d += x.dim() - consumed
        elif item is None:
            nxt = a.meta(cur.unsqueeze, d)
            steps.append(Emit("reshape", [cur], {"shape": shape(nxt)}, nxt))
            cur, d = nxt, d + 1
        elif isinstance(item, slice):
            size = int(cur.shape[d])
            start, stop, step = item.indices(size)
            if (start, stop, step) != (0, size, 1):
                nxt = a.meta(cur.__getitem__, (slice(None),) * d + (item,))
                steps.append(Emit("slice", [cur], {"dim": d, "start": start, "end": max(stop, start), "step": step}, nxt))
                cur = nxt
            d += 1
        else:
            i = int(item.__index__())
            size = int(cur.shape[d])
            nxt = a.meta(cur.select, d, i)
            steps.append(Emit("select", [cur], {"dim": d, "index": i + size if i < 0 else i}, nxt))
            cur = nxt
    if not steps:
        return Alias(x)
    return steps[:-1] + [steps[-1]._replace(out=None)]


@rule("torch.cat torch.concat torch.concatenate", "tensors, dim=0, *, axis=None", "cat")
def cat(a):
    d = a.dim if a.axis is None else a.axis
    ts = list(a.tensors)
    return Emit("cat", ts, {"dim": dim(d, max(t.dim() for t in ts))})


@rule("torch.stack", "tensors, dim=0", "stack")
def stack(a):
    ts = list(a.tensors)
    return Emit("stack", ts, {"dim": dim(a.dim, ts[0].dim() + 1)})


@rule("torch._C._nn.pad_sequence", "sequences, batch_first=False, padding_value=0.0, padding_side='right'",
      "constant_pad stack")
def pad_sequence(a):
    """nn.utils.rnn.pad_sequence: each sequence (L_i, *) padded along its first dim to the longest with padding_value
    (at the end, or the start for padding_side='left'; constant_pad), then stacked along dim 0 (batch_first) or 1."""
    seqs = list(a.sequences)
    if not seqs or any(not isinstance(t, torch.Tensor) or t.dim() < 1 for t in seqs):
        raise Unsupported("pad_sequence of an empty list or of 0-d tensors")
    if a.padding_side not in ("right", "left"):
        raise Unsupported(f"padding_side={a.padding_side!r}")
    longest, steps, padded = max(int(t.shape[0]) for t in seqs), [], []
    for t in seqs:
        short = longest - int(t.shape[0])
        if short == 0:
            padded.append(t)
            continue
        pads = [0, 0] * (t.dim() - 1) + ([0, short] if a.padding_side == "right" else [short, 0])
        out = a.meta(F.pad, t, pads, value=float(a.padding_value))
        steps.append(Emit("constant_pad", [t], {"pad": pads, "value": _pad_value(a.padding_value)}, out))
        padded.append(out)
    return steps + [Emit("stack", padded, {"dim": 0 if a.batch_first else 1})]


@rule("torch.split Tensor.split torch.tensor_split Tensor.tensor_split torch.chunk Tensor.chunk",
      "input, *args, **kwargs", "slice")
def split(a):
    d = a.kwargs.get("dim", a.args[1] if len(a.args) > 1 else 0)
    d = dim(d, a.input.dim())
    plan, start = [], 0
    for piece in a.out:
        n = int(piece.shape[d])
        plan.append(Emit("slice", [a.input], {"dim": d, "start": start, "end": start + n, "step": 1}, piece)
                    if n != int(a.input.shape[d]) else Alias(a.input, piece))
        start += n
    return plan


@rule("torch.unbind Tensor.unbind", "input, dim=0", "select")
def unbind(a):
    d = dim(a.dim, a.input.dim())
    return [Emit("select", [a.input], {"dim": d, "index": i}, piece) for i, piece in enumerate(a.out)]


@rule("torch.flip Tensor.flip", "input, *dims", "flip")
def flip(a):
    return Emit("flip", [a.input], {"dims": dims(seq_arg(a.dims), a.input.dim())})


@rule("torch.fliplr Tensor.fliplr", "input", "flip")
def fliplr(a):
    return Emit("flip", [a.input], {"dims": [1]})


@rule("torch.flipud Tensor.flipud", "input", "flip")
def flipud(a):
    return Emit("flip", [a.input], {"dims": [0]})


@rule("torch.diag Tensor.diag", "input, diagonal=0", "diag")
def diag(a):
    return Emit("diag", [a.input], {"diagonal": a.diagonal})


@rule("torch.tril Tensor.tril Tensor.tril_", "input, diagonal=0", "tril")
def tril(a):
    return Emit("tril", [a.input], {"diagonal": a.diagonal})


@rule("torch.triu Tensor.triu Tensor.triu_", "input, diagonal=0", "triu")
def triu(a):
    return Emit("triu", [a.input], {"diagonal": a.diagonal})


# ---------------------------------------------------------------- windows, padding, lookups

@rule("Tensor.unfold", "input, dimension, size, step", "unfold")
def unfold(a):
    return Emit("unfold", [a.input], {"dim": dim(a.dimension, a.input.dim()), "size": a.size, "step": a.step})


def _pad_value(v):
    return 0.0 if v is None else finite(float(v), "value")


_PAD_MODES = {"reflect": "reflect_pad", "replicate": "replicate_pad", "circular": "circular_pad"}


@rule("F.pad", "input, pad, mode='constant', value=None", "constant_pad reflect_pad replicate_pad circular_pad")
def pad(a):
    if a.mode != "constant":
        if a.mode not in _PAD_MODES:
            raise Unsupported(f"mode={a.mode!r} (constant, reflect, replicate and circular are supported)")
        return Emit(_PAD_MODES[a.mode], [a.input], {"pad": [int(p) for p in a.pad]})
    return Emit("constant_pad", [a.input], {"pad": [int(p) for p in a.pad], "value": _pad_value(a.value)})


_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}


def interpolate_scale(x, out, scale_factor, recompute):
    """The `scale` attr: torch passes scale_factor on to the kernel (source = dst / scale) unless
    recompute_scale_factor; one number for every dim, or per-dim factors that give the same ratios as the
    sizes (in / out), which is what the attr's absence means."""
    if scale_factor is None or recompute:
        return None
    k = out.dim() - 2
    scales = [float(f) for f in (scale_factor if isinstance(scale_factor, (list, tuple)) else [scale_factor] * k)]
    if len(set(scales)) == 1:
        return scales[0]
    f32 = lambda v: torch.tensor(v, dtype=torch.float32).item()  # noqa: E731
    if all(f32(1.0 / s) == f32(f32(int(x.shape[2 + d])) / f32(int(out.shape[2 + d]))) for d, s in enumerate(scales)):
        return None
    raise Unsupported(f"per-dim scale factors {scales} whose ratios differ from the sizes' (kforge keeps one scale)")


def _interpolate_meta(a):
    """Some of torch 1.13's upsample kernels (3-D, ...) lack a meta kernel: the output shape by F.interpolate's
    rule (size, else floor(in * scale_factor))."""
    x = a.input
    k = x.dim() - 2
    if a.size is not None:
        size = tup(a.size, k)
    else:
        f = a.scale_factor if isinstance(a.scale_factor, (list, tuple)) else [a.scale_factor] * k
        size = [int(math.floor(float(int(n)) * float(s))) for n, s in zip(x.shape[2:], f)]
    return torch.empty(shape(x)[:2] + size, dtype=x.dtype, device="meta")


@rule("F.interpolate F.upsample", "input, size=None, scale_factor=None, mode='nearest', align_corners=None, "
      "recompute_scale_factor=None, antialias=False", "upsample_nearest upsample_linear upsample_bicubic "
      "adaptive_avg_pool full cumsum sub mul floor cast gt where index_select", fallback=_interpolate_meta)
def interpolate(a):
    x, out = a.input, a.out
    if a.antialias:
        raise Unsupported(f"antialias=True (mode={a.mode!r} without antialias is supported)")
    size = shape(out)[2:]
    if a.mode == "nearest-exact":  # (per-dim scales of its own)
        return _nearest_exact_plan(a, x, size)
    scale = interpolate_scale(x, out, a.scale_factor, a.recompute_scale_factor)
    if a.mode == "nearest":
        return Emit("upsample_nearest", [x], {"size": size, "scale": scale})
    if a.mode == "area":  # F.interpolate's own definition: adaptive average pooling to the size
        return Emit("adaptive_avg_pool", [x], {"output_size": size})
    if a.mode in _LINEAR_MODES and _LINEAR_MODES[a.mode] == len(size):
        return Emit("upsample_linear", [x], {"size": size, "align_corners": bool(a.align_corners), "scale": scale})
    if a.mode == "bicubic":
        if x.dim() != 4:
            raise Unsupported(f"mode='bicubic' of a {x.dim()}-D input (bicubic takes a 4-D (N, C, H, W) input; "
                              "use linear for 3-D and trilinear for 5-D)")
        return Emit("upsample_bicubic", [x], {"size": size, "align_corners": bool(a.align_corners), "scale": scale})
    raise Unsupported(f"mode={a.mode!r} (nearest, nearest-exact, linear, bilinear, bicubic, trilinear and area are "
                      "supported)")


def _nearest_exact_plan(a, x, size):
    """mode='nearest-exact': output position i of a dim reads input min(floor((i + 0.5) * scale), n - 1), scale =
    1 / scale_factor (rounded to float) or n / out in float, as torch's kernels; an index_select per resized dim
    with that index, made from ops (a cumulative sum of ones, the multiply in float32, floor, a cast)."""
    b, cur, f32, i64 = _Steps(a), x, torch.float32, torch.int64
    factors = a.scale_factor if isinstance(a.scale_factor, (list, tuple)) else [a.scale_factor] * len(size)
    for d, n_out in enumerate(size):
        n_in = int(x.shape[2 + d])
        if n_in == n_out and (a.scale_factor is None or float(factors[d]) == 1.0):
            continue
        if a.scale_factor is not None and not a.recompute_scale_factor:
            scale = float(torch.tensor(1.0 / float(factors[d]), dtype=torch.float64).to(f32))
        else:
            scale = float(torch.tensor(float(n_in), dtype=f32) / torch.tensor(float(n_out), dtype=f32))
        pos = b.counting(n_out, f32)  # i + 1
        pos = b.scalar("sub", pos, 0.5)
        src = b("mul", [pos, Const(scale, f32)], {}, lambda t: t * scale, pos)
        src = b("floor", [src], {}, torch.floor, src)
        idx = b("cast", [src], {"dtype": i64}, lambda t: t.to(i64), src)
        past = b.scalar("gt", idx, n_in - 1)
        idx = b("where", [past, Const(n_in - 1, i64), idx], {}, lambda m, t: torch.where(m, n_in - 1, t), past, idx)
        cur = b("index_select", [cur, idx], {"dim": 2 + d}, torch.index_select, cur, 2 + d, idx)
    if not b.steps:
        return Alias(x)
    return b.done()


GRID_SAMPLE_MODES = ("bilinear", "nearest")  # torch's interpolation_mode 0, 1 (2 is bicubic)
GRID_SAMPLE_PADDINGS = ("zeros", "border", "reflection")  # torch's padding_mode 0, 1, 2


def grid_sample_plan(x, grid, mode, padding_mode, align_corners):
    """One grid_sample node, or Unsupported saying which forms are supported."""
    if mode not in GRID_SAMPLE_MODES:
        raise Unsupported(f"mode={mode!r} not supported; use bilinear or nearest")
    if padding_mode not in GRID_SAMPLE_PADDINGS:
        raise Unsupported(f"padding_mode={padding_mode!r} (zeros, border and reflection are supported)")
    if x.dim() != 4:
        raise Unsupported(f"grid_sample of a {x.dim()}-D input (a 4-D (N, C, H, W) input with a (N, Ho, Wo, 2) grid "
                          "is supported)")
    return Emit("grid_sample", [x, grid], {"mode": mode, "padding_mode": padding_mode,
                                           "align_corners": bool(align_corners)})


def _grid_sample_meta(a):
    """The output shape by F.grid_sample's rule, where this torch's meta kernel fails: (N, C) + grid's (Ho, Wo)."""
    return torch.empty(shape(a.input)[:2] + shape(a.grid)[1:-1], dtype=a.input.dtype, device="meta")


@rule("F.grid_sample", "input, grid, mode='bilinear', padding_mode='zeros', align_corners=None", "grid_sample",
      fallback=_grid_sample_meta)
def grid_sample(a):
    return grid_sample_plan(a.input, a.grid, a.mode, a.padding_mode, a.align_corners)


@rule("torch.grid_sampler", "input, grid, interpolation_mode, padding_mode, align_corners", "grid_sample",
      fallback=_grid_sample_meta)
def grid_sampler(a):
    mode = (GRID_SAMPLE_MODES + ("bicubic",))[int(a.interpolation_mode)]
    return grid_sample_plan(a.input, a.grid, mode, GRID_SAMPLE_PADDINGS[int(a.padding_mode)], a.align_corners)


@rule("torch.constant_pad_nd", "input, pad, value=0", "constant_pad")
def constant_pad_nd(a):
    return Emit("constant_pad", [a.input], {"pad": [int(p) for p in a.pad], "value": _pad_value(a.value)})


def _index_tensor(x):
    if x.dtype not in (torch.int64, torch.int32):
        raise Unsupported(f"an index tensor of dtype {DTYPES.get(x.dtype, x.dtype)} (int64 or int32 expected)")
    return x


@rule("F.embedding", "input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, "
      "sparse=False", "embedding norm add div gt where mul")
def embedding(a):
    idx = _index_tensor(a.input)
    if a.max_norm is None:
        return Emit("embedding", [a.weight, idx], {})
    # max_norm: torch renormalizes the looked-up rows of the weight in place (norm > max_norm: scaled by
    # max_norm / (norm + 1e-7)) and returns them. The rows are scaled here as they are read; the weight stays as it
    # was, which gives the same output on every call (a renormalized row is not renormalized again).
    p, m = float(a.norm_type), float(a.max_norm)
    if not math.isfinite(p) or p <= 0:
        raise Unsupported(f"max_norm with norm_type={a.norm_type}")
    b = _Steps(a)
    rows = b("embedding", [a.weight, idx], {}, F.embedding, a.input, a.weight)
    last = rows.dim() - 1
    norm = b("norm", [rows], {"dims": [last], "keepdim": True, "p": p},
             lambda t: torch.linalg.vector_norm(t, p, dim=last, keepdim=True), rows)
    ratio = b.scalar("div", b.scalar("add", norm, 1e-7), m, reverse=True)
    over = b.scalar("gt", norm, m)
    scale = b("where", [over, ratio, Const(1.0, rows.dtype)], {}, lambda c, r: torch.where(c, r, 1.0), over, ratio)
    b("mul", [rows, scale], {}, torch.mul, rows, scale)
    return b.done()


@rule("torch.embedding", "weight, input, padding_idx=-1, scale_grad_by_freq=False, sparse=False", "embedding")
def torch_embedding(a):
    return Emit("embedding", [a.weight, _index_tensor(a.input)], {})


@rule("torch.index_select Tensor.index_select", "input, dim, index", "index_select")
def index_select(a):
    return Emit("index_select", [a.input, _index_tensor(a.index)], {"dim": dim(a.dim, a.input.dim())})


@rule("torch.gather Tensor.gather", "input, dim, index, *, sparse_grad=False", "gather")
def gather(a):
    return Emit("gather", [a.input, _index_tensor(a.index)], {"dim": dim(a.dim, a.input.dim())})


# ---------------------------------------------------------------- order: sort, topk, running extremes

@rule("torch.sort Tensor.sort", "input, dim=-1, descending=False, *, stable=False", "sort argsort")
def sort(a):
    """Values and indices are two nodes (kforge's sort is stable, torch's indices of equal keys may differ
    without stable=True)."""
    attrs = {"dim": dim(a.dim, a.input.dim()), "descending": bool(a.descending)}
    return [Emit("sort", [a.input], attrs, a.out[0]), Emit("argsort", [a.input], attrs, a.out[1])]


@rule("torch.argsort Tensor.argsort", "input, dim=-1, descending=False, *, stable=False", "argsort")
def argsort(a):
    return Emit("argsort", [a.input], {"dim": dim(a.dim, a.input.dim()), "descending": bool(a.descending)})


@rule("torch.topk Tensor.topk", "input, k, dim=-1, largest=True, sorted=True", "topk topk_indices")
def topk(a):
    """sorted=False lets torch return the k in any order; kforge returns them sorted either way."""
    attrs = {"k": int(a.k), "dim": dim(a.dim, a.input.dim()), "largest": bool(a.largest)}
    return [Emit("topk", [a.input], attrs, a.out[0]), Emit("topk_indices", [a.input], attrs, a.out[1])]


def _running(op):
    def norm(a):
        d = dim(a.dim, a.input.dim())
        return [Emit(op, [a.input], {"dim": d}, a.out[0]), Emit(f"{op}_indices", [a.input], {"dim": d}, a.out[1])]
    norm.__name__ = op
    return norm


def _running_meta(kind):
    """torch 1.13 has no meta kernel for cummax/cummin: (values, indices) of the input's shape."""
    def meta(a):
        x = a.input
        indices = torch.empty(shape(x), dtype=torch.int64, device="meta")
        return getattr(torch.return_types, kind)((torch.empty_like(x), indices))
    return meta


rule("torch.cummax Tensor.cummax", "input, dim", "cummax cummax_indices", fallback=_running_meta("cummax"))(
    _running("cummax"))
rule("torch.cummin Tensor.cummin", "input, dim", "cummin cummin_indices", fallback=_running_meta("cummin"))(
    _running("cummin"))


# ---------------------------------------------------------------- writes by index, one_hot, bags, fold

def _scatter_index(x):
    if x.dtype != torch.int64:
        raise Unsupported(f"a scatter index of dtype {DTYPES.get(x.dtype, x.dtype)} (int64 expected)")
    return x


def scatter_plan(a, x, d, index, v, reduce):
    """x.scatter(d, index, v) for a tensor or a number v, and its legacy reduce='add' / 'multiply' forms:
    scatter_add / scatter_prod of the tensor, or of a fill of the number shaped as the index (the torch rule and
    the ATen rule both)."""
    if reduce is None:
        if isinstance(v, torch.Tensor):
            return Emit("scatter", [x, index, v], {"dim": d})
        if not is_num(v):
            raise Unsupported(f"a scatter value of type {type(v).__name__}")
        return Emit("scatter_value", [x, index], {"dim": d, "value": finite(v, "value")})
    if reduce not in ("add", "multiply"):
        raise Unsupported(f"reduce={reduce!r} (reduce='add' and 'multiply' are supported; scatter_reduce takes "
                          "'sum', 'mean', 'prod', 'amax' and 'amin')")
    op, b = ("scatter_add" if reduce == "add" else "scatter_prod"), _Steps(a)
    if not isinstance(v, torch.Tensor):
        if not is_num(v):
            raise Unsupported(f"a scatter value of type {type(v).__name__}")
        v = b("full", [], {"shape": shape(index), "value": finite(v, "value"), "dtype": x.dtype}, torch.full,
              shape(index), v, dtype=x.dtype, device="meta")
    b(op, [x, index, v], {"dim": d}, torch.scatter_add, x, d, index, v)
    return b.done(a.out)


@rule("torch.scatter Tensor.scatter Tensor.scatter_", "input, dim, index, src=None, *, value=None, reduce=None",
      "scatter scatter_value scatter_add scatter_prod full")
def scatter(a):
    return scatter_plan(a, a.input, dim(a.dim, a.input.dim()), _scatter_index(a.index),
                        a.value if a.src is None else a.src, a.reduce)


@rule("Tensor.fill_diagonal_", "input, fill_value, wrap=False", "reshape full cumsum sub mul scatter_value")
def fill_diagonal(a):
    """x.fill_diagonal_(v, wrap): the elements whose indices are all equal set to v, as torch's: over x flattened,
    every (sum of x's strides)-th element from the first, min(shape) of them (a tall matrix with wrap: all of
    them to the end, the diagonal starting again below a gap row). A scatter_value at those positions."""
    x, v = a.input, a.fill_value
    dims = shape(x)
    if len(dims) < 2 or (len(dims) > 2 and len(set(dims)) > 1):
        raise Unsupported(f"fill_diagonal_ of a tensor of shape {dims} (2-d, or all dims of one length, as torch)")
    if not is_num(v):
        raise Unsupported("fill_diagonal_ with a tensor value")
    numel, step = math.prod(dims), sum(math.prod(dims[k + 1:]) for k in range(len(dims)))
    count = min(dims) if not (a.wrap and len(dims) == 2 and dims[0] > dims[1] + 1) else (numel - 1) // step + 1
    if numel == 0:
        raise Unsupported(f"fill_diagonal_ of an empty tensor of shape {dims}")
    b, i64 = _Steps(a), torch.int64
    flat = b("reshape", [x], {"shape": [numel]}, torch.reshape, x, [numel])
    pos = b.scalar("mul", b.scalar("sub", b.counting(count, i64), 1), step)
    put = b("scatter_value", [flat, pos], {"dim": 0, "value": finite(v, "value")},
            lambda t, i: t.scatter(0, i, v), flat, pos)
    b("reshape", [put], {"shape": dims}, torch.reshape, put, dims)
    return b.done(a.out)


@rule("torch.scatter_add Tensor.scatter_add Tensor.scatter_add_", "input, dim, index, src", "scatter_add")
def scatter_add(a):
    return Emit("scatter_add", [a.input, _scatter_index(a.index), a.src], {"dim": dim(a.dim, a.input.dim())})


def _one_hot_meta(a):
    """one_hot of a meta tensor needs num_classes (it cannot read the largest class)."""
    if int(a.num_classes) < 0:
        raise Unsupported("num_classes=-1 (the class count would come from the data; pass num_classes)")
    return torch.empty(shape(a.input) + [int(a.num_classes)], dtype=torch.int64, device="meta")


@rule("F.one_hot", "input, num_classes=-1", "one_hot", fallback=_one_hot_meta)
def one_hot(a):
    if int(a.num_classes) < 0:
        raise Unsupported("num_classes=-1 (the class count would come from the data; pass num_classes)")
    return Emit("one_hot", [_scatter_index(a.input)], {"num_classes": int(a.num_classes)})


@rule("F.embedding_bag", "input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, "
      "mode='mean', sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None",
      "embedding_bag")
def embedding_bag(a):
    if a.max_norm is not None:
        raise Unsupported("max_norm= (it renormalizes the weight in place)")
    if a.per_sample_weights is not None:
        raise Unsupported("per_sample_weights=")
    if a.padding_idx is not None:
        raise Unsupported("padding_idx=")
    return Emit("embedding_bag", [a.weight, _index_tensor(a.input), a.offsets],
                {"mode": a.mode, "include_last_offset": bool(a.include_last_offset)})


def _fold_meta(a):
    """F.fold's output, (N, C) or (C,) + output_size (torch 1.13's meta kernel gets unbatched inputs wrong)."""
    x, out = a.input, tup(a.output_size, 2)
    k = tup(a.kernel_size, 2)
    return torch.empty(shape(x)[:-2] + [int(x.shape[-2]) // (k[0] * k[1])] + out, dtype=x.dtype, device="meta")


@rule("F.fold", "input, output_size, kernel_size, dilation=1, padding=0, stride=1", "fold", run=_fold_meta)
def fold(a):
    return Emit("fold", [a.input], {"output_size": tup(a.output_size, 2), "kernel_size": tup(a.kernel_size, 2),
                                    "dilation": tup(a.dilation, 2), "padding": tup(a.padding, 2),
                                    "stride": tup(a.stride, 2)})


# ---------------------------------------------------------------- in-place writes (x[i] = v, copy_, fill_)

def index_ranges(x, index):
    """Basic indexing x[index] (ints, step-1 slices, None, ...) -> one (start, end) per dim of x."""
    idx = index if isinstance(index, tuple) else (index,)
    consumed = sum(1 for i in idx if i is not None and i is not Ellipsis)
    ranges, d = [], 0
    for item in idx:
        if item is Ellipsis:
            n = x.dim() - consumed
            ranges += [(0, int(x.shape[d + k])) for k in range(n)]
            d += n
        elif item is None:
            continue
        elif isinstance(item, slice):
            start, stop, step = item.indices(int(x.shape[d]))
            if step != 1:
                raise Unsupported(f"a write through a slice with step {step}")
            ranges.append((start, max(start, stop)))
            d += 1
        elif not isinstance(item, (torch.Tensor, list, bool)) and hasattr(item, "__index__"):
            i = int(item.__index__())
            i = i + int(x.shape[d]) if i < 0 else i
            ranges.append((i, i + 1))
            d += 1
        else:
            raise Unsupported(f"a write through advanced indexing with {type(item).__name__} "
                              f"(ints, slices, None, ... or one bool mask are supported)")
    ranges += [(0, int(s)) for s in x.shape[d:]]
    return ranges


def _value_as(x, value, view_shape, meta, steps):
    """The written value as a tensor of view_shape in x's dtype (numbers become `full`)."""
    if is_num(value):
        v = meta(torch.empty, view_shape, dtype=x.dtype, device="meta")
        steps.append(Emit("full", [], {"shape": view_shape, "value": finite(value, "value"), "dtype": x.dtype}, v))
        return v
    if not isinstance(value, torch.Tensor):
        raise Unsupported(f"writing a {type(value).__name__}")
    v = value
    if v.dtype != x.dtype:
        nxt = meta(v.to, x.dtype)
        steps.append(Emit("cast", [v], {"dtype": x.dtype}, nxt))
        v = nxt
    if shape(v) != view_shape:
        if v.dim() > len(view_shape):  # leading 1s are dropped, as torch does
            if any(int(s) != 1 for s in v.shape[:v.dim() - len(view_shape)]):
                raise Unsupported(f"a value of shape {shape(value)} written into {view_shape}")
            nxt = meta(v.reshape, shape(v)[v.dim() - len(view_shape):])
            steps.append(Emit("reshape", [v], {"shape": shape(nxt)}, nxt))
            v = nxt
        if shape(v) != view_shape:
            nxt = meta(v.expand, view_shape)
            steps.append(Emit("expand", [v], {"shape": view_shape}, nxt))
            v = nxt
    return v


class DiagonalView(NamedTuple):
    """The view x.diagonal(offset, dim1, dim2) as a write-back index (the tracer records it; write_plan takes it)."""
    offset: int
    dim1: int
    dim2: int


def diagonal_write_plan(x, view, src, meta, target):
    """x with src written over the diagonal x.diagonal(*view) reads (torch.diagonal_scatter): the two dims moved last
    (a permute, where they are not) and merged (reshape), a scatter along the merged dim to the diagonal's positions
    (the offset's first entry, then every (m + 1)-th: a cumulative sum of ones, scaled), and back to x's shape."""
    offset, d1, d2 = view
    n, m, i64 = int(x.shape[d1]), int(x.shape[d2]), torch.int64
    length = max(0, min(n, m - offset)) if offset >= 0 else max(0, min(n + offset, m))
    if length == 0:
        raise Unsupported(f"an empty diagonal (offset {offset} of {n} x {m})")
    b, cur = _Steps(_MetaOnly(meta)), x
    perm = [d for d in range(x.dim()) if d not in (d1, d2)] + [d1, d2]
    moved = perm != list(range(x.dim()))
    if moved:
        cur = b("permute", [cur], {"dims": perm}, lambda t: t.permute(perm), cur)
    lead = shape(cur)[:-2]
    cur = b("reshape", [cur], {"shape": lead + [n * m]}, torch.reshape, cur, lead + [n * m])
    start = offset if offset >= 0 else -offset * m
    pos = b.scalar("mul", b.scalar("sub", b.counting(length, i64), 1), m + 1)
    if start:
        pos = b.scalar("add", pos, start)
    along = [1] * len(lead) + [length]
    pos = b("reshape", [pos], {"shape": along}, torch.reshape, pos, along)
    if lead:
        pos = b("expand", [pos], {"shape": lead + [length]}, lambda t: t.expand(lead + [length]), pos)
    if is_num(src):
        src = b("full", [], {"shape": lead + [length], "value": finite(src, "value"), "dtype": x.dtype}, torch.full,
                lead + [length], src, dtype=x.dtype, device="meta")
    elif src.dtype != x.dtype:
        src = b("cast", [src], {"dtype": x.dtype}, lambda t: t.to(x.dtype), src)
    if shape(src) != lead + [length]:
        src = b("expand", [src], {"shape": lead + [length]}, lambda t: t.expand(lead + [length]), src)
    cur = b("scatter", [cur, pos, src], {"dim": len(lead)}, torch.scatter, cur, len(lead), pos, src)
    cur = b("reshape", [cur], {"shape": lead + [n, m]}, torch.reshape, cur, lead + [n, m])
    if moved:
        back = [perm.index(d) for d in range(x.dim())]
        b("permute", [cur], {"dims": back}, lambda t: t.permute(back), cur)
    return b.done(target)


def write_plan(x, index, value, meta, target):
    """x[index] = value as nodes whose last value is bound to `target`: slices of x around the written
    region, concatenated back together per restricted dim; a bool mask over x's leading dims -> where; integer
    index tensors -> _indexed_write_plan (a scatter)."""
    if isinstance(index, DiagonalView):
        return diagonal_write_plan(x, index, value, meta, target)
    idx = index if isinstance(index, tuple) else (index,)
    steps = []
    if any(isinstance(i, torch.Tensor) and i.dtype in (torch.int64, torch.int32) for i in idx):
        return _indexed_write_plan(x, idx, value, meta, target)
    if len(idx) == 1 and isinstance(idx[0], torch.Tensor) and idx[0].dtype == torch.bool:
        mask = idx[0]
        if shape(mask) != shape(x)[:mask.dim()]:
            raise Unsupported(f"a bool mask of shape {shape(mask)} for a tensor of shape {shape(x)}")
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            raise Unsupported("x[mask] = tensor (the number of written elements depends on the data)")
        if mask.dim() < x.dim():
            m2 = meta(mask.reshape, shape(mask) + [1] * (x.dim() - mask.dim()))
            steps.append(Emit("reshape", [mask], {"shape": shape(m2)}, m2))
            mask = m2
        v = _value_as(x, value, [], meta, steps) if not is_num(value) else Const(value, x.dtype)
        return steps + [Emit("where", [mask, v, x], {}, target)]
    ranges = index_ranges(x, idx)
    region = [e - s for s, e in ranges]
    view_shape = region if is_num(value) else shape(meta(x.__getitem__, idx))
    v = _value_as(x, value, view_shape, meta, steps)
    if view_shape != region:  # ints and None in the index: back to one dim per dim of x
        nxt = meta(v.reshape, region)
        steps.append(Emit("reshape", [v], {"shape": region}, nxt))
        v = nxt
    restricted = [(d, s, e) for d, (s, e) in enumerate(ranges) if (s, e) != (0, int(x.shape[d]))]

    def narrow(cur, d, lo, hi):
        piece = meta(cur.narrow, d, lo, hi - lo)
        steps.append(Emit("slice", [cur], {"dim": d, "start": lo, "end": hi, "step": 1}, piece))
        return piece

    def place(cur, k):
        if k == len(restricted):
            return v
        d, s, e = restricted[k]
        n = int(cur.shape[d])
        inner = place(narrow(cur, d, s, e), k + 1) if k + 1 < len(restricted) else v
        pieces = ([narrow(cur, d, 0, s)] if s > 0 else []) + [inner] + ([narrow(cur, d, e, n)] if e < n else [])
        out = meta(torch.cat, pieces, d)
        steps.append(Emit("cat", pieces, {"dim": d}, out))
        return out

    if any(s == e for s, e in ranges):  # nothing is written
        return [Alias(x, target)]
    result = place(x, 0)
    if steps and steps[-1].out is result:
        steps[-1] = steps[-1]._replace(out=target)
    else:
        steps.append(Alias(result, target))
    return steps


@rule("Tensor.__setitem__", "input, index, value",
      "slice cat reshape expand cast full where permute lt ge add mul logical_and scatter",
      objs=[("Tensor.__setitem__", tensor_setitem)])
def setitem(a):
    return write_plan(a.input, a.index, a.value, a.meta, a.input)


@rule("Tensor.copy_", "input, src, non_blocking=False", "reshape expand cast")
def copy_(a):
    return write_plan(a.input, (Ellipsis,), a.src, a.meta, a.input)


@rule("Tensor.fill_", "input, value", "full expand cast")
def fill_(a):
    return write_plan(a.input, (Ellipsis,), a.value, a.meta, a.input)


@rule("Tensor.zero_ torch.zero_", "input", "full")
def zero_(a):
    return write_plan(a.input, (Ellipsis,), 0, a.meta, a.input)


# ---------------------------------------------------------------- constants created inside forward

def _full(value):
    def norm(a):
        v = value if value is not None else a.fill_value
        if isinstance(v, torch.Tensor):
            raise Unsupported("fill value given as a tensor")
        return Emit("full", [], {"shape": shape(a.out), "value": finite(v, "value"), "dtype": a.out.dtype})
    return norm


rule("torch.zeros_like torch.empty_like torch.zeros torch.empty Tensor.new_zeros Tensor.new_empty",
     "*args, **kwargs", "full")(_full(0))
rule("torch.ones_like torch.ones Tensor.new_ones", "*args, **kwargs", "full")(_full(1))
rule("torch.full_like torch.full", "input, fill_value, **kwargs", "full")(_full(None))
rule("Tensor.new_full", "input, size, fill_value, **kwargs", "full")(_full(None))


@rule("torch.tensor torch.as_tensor torch.scalar_tensor Tensor.new_tensor", "*args, **kwargs", "full")
def tensor(a):
    data = a.args[-1] if a.fname == "Tensor.new_tensor" else (a.args[0] if a.args else a.kwargs.get("data"))
    if is_num(data):
        return Emit("full", [], {"shape": [], "value": finite(data, "value"), "dtype": a.out.dtype})
    values = _flat_numbers(data)
    if values is None:
        raise Unsupported("torch.tensor inside forward from data other than (nested lists of) Python numbers")
    if len(values) > _SMALL_CONSTANT:
        raise Unsupported(f"torch.tensor of {len(values)} numbers inside forward (at most {_SMALL_CONSTANT}): "
                          f"make it once in __init__ with self.register_buffer(...)")
    if not values or a.out.numel() != len(values):
        raise Unsupported("torch.tensor of an empty or ragged list inside forward")
    # No op holds tensor data: a `full` of each number, concatenated and reshaped (mean/std lists, class weights).
    steps, parts = [], []
    for v in values:
        one = a.meta(torch.empty, [1], dtype=a.out.dtype, device="meta")
        steps.append(Emit("full", [], {"shape": [1], "value": finite(v, "value"), "dtype": a.out.dtype}, one))
        parts.append(one)
    row = a.meta(torch.empty, [len(values)], dtype=a.out.dtype, device="meta")
    return steps + [Emit("cat", parts, {"dim": 0}, row), Emit("reshape", [row], {"shape": shape(a.out)})]


_SMALL_CONSTANT = 32  # numbers: a constant list made in forward is built from fills up to this size


def _flat_numbers(data):
    """The numbers of nested lists / tuples in row-major order, or None when anything else is in them."""
    if is_num(data) or isinstance(data, bool):
        return [data]
    if not isinstance(data, (list, tuple)):
        return None
    out = []
    for d in data:
        sub = _flat_numbers(d)
        if sub is None:
            return None
        out += sub
    return out


# the factories that must be forced onto the meta device (in every phase)
FACTORIES = {resolve(n) for n in (
    "torch.empty torch.zeros torch.ones torch.rand torch.randn torch.randint torch.full torch.tensor torch.arange "
    "torch.linspace torch.logspace torch.eye torch.randperm torch.normal torch.as_tensor torch.scalar_tensor "
    "torch.empty_strided torch.zeros_like torch.ones_like torch.empty_like torch.full_like torch.rand_like "
    "torch.randn_like torch.randint_like torch.fft.fftfreq torch.fft.rfftfreq torch.hann_window torch.hamming_window "
    "torch.blackman_window torch.bartlett_window").split()} - {None}

# factories whose values follow from their Python arguments: small results also get a CPU twin (importer)
TWIN_FACTORIES = {resolve(n) for n in (
    "torch.zeros torch.ones torch.full torch.tensor torch.arange torch.linspace torch.logspace torch.eye "
    "torch.as_tensor torch.scalar_tensor torch.fft.fftfreq torch.fft.rfftfreq torch.hann_window torch.hamming_window "
    "torch.blackman_window torch.bartlett_window").split()} - {None}

# draws of random numbers (in forward they make the output a function of the generator, not of the inputs)
RANDOM = {resolve(n) for n in (
    "torch.rand torch.randn torch.randint torch.rand_like torch.randn_like torch.randint_like torch.normal "
    "torch.bernoulli torch.multinomial torch.poisson torch.randperm Tensor.uniform_ Tensor.normal_ Tensor.random_ "
    "Tensor.bernoulli Tensor.bernoulli_ Tensor.exponential_ Tensor.geometric_ Tensor.cauchy_ Tensor.log_normal_ "
    "Tensor.multinomial").split()} - {None}


_REVERSE = {}


def callable_name(func):
    """The dotted name of a callable: as registered in the table, else found in torch's namespaces."""
    if func in NAMES:
        return NAMES[func]
    if not _REVERSE:
        for prefix, ns in (("Tensor", torch.Tensor), ("F", F), ("torch", torch), ("torch.fft", torch.fft),
                           ("torch.linalg", torch.linalg), ("torch.special", torch.special)):
            names = dir(ns) if isinstance(ns, type) else list(vars(ns))  # vars(): no lazy submodule imports
            for n in names:
                obj = getattr(ns, n, None) if isinstance(ns, type) else vars(ns)[n]
                if callable(obj):
                    try:
                        _REVERSE.setdefault(obj, f"{prefix}.{n}")
                    except TypeError:  # unhashable
                        pass
    try:
        hit = _REVERSE.get(func)
    except TypeError:
        hit = None
    if hit:
        return hit
    owner = getattr(func, "__self__", None)
    if getattr(func, "__name__", "") == "__get__" and owner is not None:
        return f"Tensor.{getattr(owner, '__name__', '?')}"
    mod = getattr(func, "__module__", None) or "torch"
    return f"{mod}.{getattr(func, '__qualname__', getattr(func, '__name__', repr(func)))}"


def display_name(name):
    """'F.pad' -> 'torch.nn.functional.pad', 'Tensor.sort' -> 'torch.Tensor.sort'."""
    if name.startswith("F."):
        return "torch.nn.functional." + name[2:]
    if name.startswith("Tensor."):
        return "torch.Tensor." + name[7:]
    return name
