# Complex tensors in forward, held as two real tensors: the real part and the imaginary part.
"""kforge's graphs hold real tensors only. A complex tensor in a model's forward (rotary embeddings written with
torch.view_as_complex and torch.polar, as LLaMA's reference code does; a complex multiply; abs and angle) is
followed as a pair of real meta tensors of its shape, (re, im). Each call that reads a complex tensor is written
again as ordinary torch code on the parts and run under the tracer's mode, so every node it records comes from
an existing import rule: z * w becomes (a*c - b*d, a*d + b*c), torch.view_as_real(z) a stack of the parts,
z.reshape(s) the same reshape of each part. A complex parameter or buffer (LLaMA's freqs_cis) is a graph
param of its real view (shape + [2], "complex": true in the graph; the ModelNew passes the complex tensor's own
memory, which is that view), split into parts where forward first reads it.

What a model may do with a complex tensor is listed below (STRUCTURAL, LINEAR and the arithmetic handlers);
anything else says so by name and points at torch.view_as_real. A complex graph input or output is refused
with the same advice."""
import torch

from . import fourier
from . import import_ops as ops
from .import_ops import UserError

REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}


def _named(names):
    return {f for f in (ops.resolve(n) for n in names.split()) if f is not None}


# Calls that move or select elements: the same call on each part (index and mask tensors are passed unchanged).
STRUCTURAL = _named(
    "Tensor.reshape torch.reshape Tensor.view Tensor.view_as Tensor.reshape_as Tensor.flatten torch.flatten Tensor.unflatten "
    "Tensor.unsqueeze torch.unsqueeze Tensor.squeeze torch.squeeze Tensor.permute torch.permute Tensor.transpose "
    "torch.transpose Tensor.swapaxes Tensor.t torch.t Tensor.T.__get__ Tensor.mT.__get__ Tensor.contiguous "
    "Tensor.clone torch.clone Tensor.detach torch.detach Tensor.expand Tensor.expand_as torch.broadcast_to "
    "Tensor.repeat Tensor.tile torch.tile Tensor.__getitem__ Tensor.narrow torch.narrow Tensor.select torch.select "
    "Tensor.chunk torch.chunk Tensor.split torch.split Tensor.unbind torch.unbind torch.cat torch.concat torch.stack "
    "Tensor.roll torch.roll Tensor.flip torch.flip Tensor.movedim torch.movedim Tensor.index_select "
    "torch.index_select Tensor.gather torch.gather Tensor.cuda Tensor.cpu Tensor.requires_grad_ "
    "Tensor.repeat_interleave torch.repeat_interleave torch.fft.fftshift torch.fft.ifftshift") | {ops.tensor_getitem}
# Linear in the complex tensor with real coefficients: the same call on each part.
# Their other tensor gives only a shape: it may be real.
SHAPE_ONLY = _named("Tensor.view_as Tensor.expand_as Tensor.reshape_as")
LINEAR = _named("Tensor.sum torch.sum Tensor.mean torch.mean Tensor.cumsum torch.cumsum Tensor.neg torch.neg "
                "Tensor.negative torch.negative Tensor.__neg__ Tensor.__pos__ torch.positive")
CONJUGATE = _named("Tensor.conj torch.conj Tensor.conj_physical torch.conj_physical")
SAME = _named("Tensor.resolve_conj torch.resolve_conj Tensor.resolve_neg torch.resolve_neg")
# A complex tensor made from real ones.
FROM_REAL = _named("torch.view_as_complex torch.polar torch.complex")
# (operation, the operands swapped): z op w.
BINARY = {}
for _names, _op, _swapped in (
        ("Tensor.mul Tensor.__mul__ torch.mul Tensor.multiply torch.multiply", "mul", False),
        ("Tensor.__rmul__", "mul", True),
        ("Tensor.add Tensor.__add__ torch.add", "add", False), ("Tensor.__radd__", "add", True),
        ("Tensor.sub Tensor.__sub__ torch.sub Tensor.subtract torch.subtract", "sub", False),
        ("Tensor.__rsub__ torch.rsub", "sub", True),
        ("Tensor.div Tensor.__truediv__ torch.div Tensor.divide torch.divide Tensor.true_divide torch.true_divide",
         "div", False),
        ("Tensor.__rtruediv__ Tensor.__rdiv__", "div", True),
        ("Tensor.matmul Tensor.__matmul__ torch.matmul Tensor.mm torch.mm Tensor.bmm torch.bmm", "matmul", False),
        ("Tensor.__rmatmul__", "matmul", True)):
    for _f in _named(_names):
        BINARY[_f] = (_op, _swapped)
UNARY = {}
for _names, _op in (("torch.view_as_real", "view_as_real"), ("Tensor.real.__get__ torch.real", "real"),
                    ("Tensor.imag.__get__ torch.imag", "imag"), ("Tensor.abs torch.abs Tensor.__abs__ "
                    "Tensor.absolute torch.absolute", "abs"), ("Tensor.angle torch.angle", "angle"),
                    ("Tensor.exp torch.exp", "exp"), ("Tensor.reciprocal torch.reciprocal", "reciprocal")):
    for _f in _named(_names):
        UNARY[_f] = _op
CASTS = _named("Tensor.to Tensor.type Tensor.type_as")
# A complex tensor made by a factory in forward (FNO's out_ft = torch.zeros(..., dtype=torch.cfloat)).
FACTORIES = _named("torch.zeros torch.ones torch.empty torch.full torch.zeros_like torch.ones_like torch.empty_like "
                   "torch.full_like")
# z[index] = value: the same write into each part.
SETITEM = {ops.tensor_setitem, ops._SETITEM}
EINSUM = _named("torch.einsum")
SUPPORTED = ("view_as_real, .real, .imag, abs, angle, conj, exp, reciprocal, + - * / and matmul (with complex, real or "
             "Python numbers), einsum, sum, mean, cumsum, reshaping, indexing, cat and stack, fftshift, and " +
             fourier.SUPPORTED)


def involved(func, args, kwargs):
    """Whether a call reads a complex tensor or makes one from real tensors (x.to(torch.complex64) too, and a
    Fourier transform of a real tensor)."""
    if (func in FROM_REAL or func in fourier.TRANSFORMS or func in fourier.STFT or
            any(t.is_complex() for t in _tensors([args, kwargs]))):
        return True
    if func in BINARY and any(isinstance(v, complex) for v in [*args, *kwargs.values()]):
        return True  # 1j * x: a real tensor times a complex number
    if func in FACTORIES and ((isinstance(kwargs.get("dtype"), torch.dtype) and kwargs["dtype"].is_complex) or
                              any(isinstance(v, complex) for v in [*args, *kwargs.values()])):
        return True  # torch.zeros(..., dtype=torch.cfloat), torch.full(shape, 1 - 2j)
    return func in CASTS and any(isinstance(v, torch.dtype) and v.is_complex for v in [*args, *kwargs.values()])


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


class Pairs:
    """The (re, im) real meta tensors of each complex meta tensor forward has made or read."""

    def __init__(self, tracer):
        self.tracer = tracer
        self.parts = {}   # id(complex tensor) -> (tensor, re, im)
        self.stored = {}  # id(complex param) -> (tensor, its real view, bound to the param's value)

    def store(self, z, real_view):
        self.stored[id(z)] = (z, real_view)

    def bind(self, z, re, im):
        self.parts[id(z)] = (z, re, im)

    def of(self, z):
        hit = self.parts.get(id(z))
        if hit is not None and hit[0] is z:
            return hit[1], hit[2]
        hit = self.stored.get(id(z))
        if hit is None and self.tracer.attribute_param(z) is not None:  # a plain complex attribute (freqs_cis)
            hit = self.stored.get(id(z))
        if hit is not None and hit[0] is z:
            with self.tracer.recording():
                re, im = hit[1].select(-1, 0), hit[1].select(-1, 1)
            self.bind(z, re, im)
            return re, im
        self.tracer.value_of(z)  # says why (a poisoned result, a plain tensor attribute)
        raise UserError(f"{self.tracer.where()}: a complex tensor that forward did not derive from its inputs, "
                        f"parameters or buffers")

    # -- one call
    def call(self, func, shown, args, kwargs):
        where = self.tracer.where()
        try:
            out = self.tracer.run(func, *args, **kwargs)
        except Exception as e:
            raise UserError(f"{where}: {shown}: {type(e).__name__}: {str(e).strip().splitlines()[0]}") from None
        if func in SETITEM:
            with self.tracer.recording():
                return self._setitem(shown, args)
        if not _tensors(out):
            return out  # size(), dim(), is_complex(), ...
        if self.tracer.mutates(func):
            raise UserError(f"{where}: {shown} updates a complex tensor in place; kforge follows complex tensors "
                            f"only through out-of-place calls (write z = z * w)")
        with self.tracer.recording():
            if func in STRUCTURAL or func in LINEAR or func in SAME:
                return self._per_part(func, shown, args, kwargs, out)
            if func in CONJUGATE:
                re, im = self.of(args[0])
                return self._result(out, re, -im)
            if func in CASTS:
                return self._cast(func, shown, args, kwargs, out)
            if func in FACTORIES:
                return self._factory(func, args, kwargs, out)
            if func in FROM_REAL:
                return self._from_real(ops.callable_name(func), args, kwargs, out)
            if func in BINARY:
                return self._binary(func, shown, args, kwargs, out)
            if func in UNARY:
                return self._unary(UNARY[func], args[0], out)
            if func in EINSUM:
                return self._einsum(shown, args, kwargs, out)
            if func in fourier.TRANSFORMS:
                return fourier.transform(self, func, shown, args, kwargs, out)
            if func in fourier.STFT:
                return fourier.stft(self, func, shown, args, kwargs, out)
        raise UserError(f"{where}: {shown} on a complex tensor: kforge holds a complex tensor as its real and "
                        f"imaginary parts and supports {SUPPORTED}; make the rest real first (torch.view_as_real, "
                        f"or cos/sin of the angle)")

    def _result(self, out, re, im):
        """out (the meta complex result) bound to parts of its shape; returned to the model's code."""
        if not isinstance(out, torch.Tensor) or not out.is_complex():
            raise UserError(f"{self.tracer.where()}: a complex operation whose result torch gives as "
                            f"{getattr(out, 'dtype', type(out).__name__)}; kforge cannot say what it computes")
        shape = tuple(out.shape)
        re, im = (self._fit(p, shape, out) for p in (re, im))
        self.bind(out, re, im)
        return out

    @staticmethod
    def _fit(part, shape, out):
        dt = REAL_OF.get(out.dtype, torch.float32)
        if not isinstance(part, torch.Tensor):
            return torch.full(shape, float(part), dtype=dt)
        if part.dtype != dt:
            part = part.to(dt)
        return part if tuple(part.shape) == shape else part.expand(shape)

    def _swapped(self, obj, k):
        if isinstance(obj, torch.Tensor):
            return self.of(obj)[k] if obj.is_complex() else obj
        if isinstance(obj, (list, tuple)):
            items = [self._swapped(o, k) for o in obj]
            return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
        if isinstance(obj, dict):
            return {key: self._swapped(v, k) for key, v in obj.items()}
        return obj

    def _per_part(self, func, shown, args, kwargs, out):
        for t in _tensors([args[:1], kwargs] if func in SHAPE_ONLY else [args, kwargs]):
            if not t.is_complex() and t.is_floating_point():
                raise UserError(f"{self.tracer.where()}: {shown} mixes complex and real floating tensors; make the "
                                f"real one complex first (torch.complex(x, torch.zeros_like(x)))")
        if kwargs.get("dtype") is not None:
            kwargs = dict(kwargs, dtype=REAL_OF.get(kwargs["dtype"], kwargs["dtype"]))
        parts = [func(*self._swapped(list(args), k), **self._swapped(kwargs, k)) for k in (0, 1)]
        outs, res, ims = _tensors(out), _tensors(parts[0]), _tensors(parts[1])
        if len(outs) != len(res) or len(res) != len(ims):
            raise UserError(f"{self.tracer.where()}: {shown} on a complex tensor gave results kforge could not pair "
                            f"up")
        for z, re, im in zip(outs, res, ims):
            self._result(z, re, im)
        return out

    def _cast(self, func, shown, args, kwargs, out):
        """.to(device / complex dtype), .type(complex dtype), .type_as(complex): the parts unchanged (or cast)."""
        z = args[0]
        if not isinstance(out, torch.Tensor) or not out.is_complex():
            raise UserError(f"{self.tracer.where()}: {shown} makes a complex tensor real, which drops its "
                            f"imaginary part; take .real (or torch.view_as_real) instead")
        dt = REAL_OF[out.dtype]
        if not z.is_complex():  # a real tensor made complex: a zero imaginary part
            re = z.to(dt)
            return self._result(out, re, torch.zeros_like(re))
        re, im = self.of(z)
        return self._result(out, re.to(dt), im.to(dt))

    def _factory(self, func, args, kwargs, out):
        """torch.zeros / ones / empty / full (and their _like forms) of a complex dtype: the real part made by the
        same factory in the real dtype (empty as zeros: its values are unspecified), the imaginary part zeros (a
        complex fill value's imaginary part for full)."""
        name = ops.callable_name(func).rsplit(".", 1)[-1]
        dt, shape = REAL_OF[out.dtype], tuple(out.shape)
        value = 1.0 if name.startswith("ones") else 0.0
        if name.startswith("full"):
            value = args[1] if len(args) > 1 else kwargs.get("fill_value")
        value = complex(value)
        device = kwargs.get("device") or (args[0].device if name.endswith("_like") else "meta")
        re = torch.full(shape, value.real, dtype=dt, device=device)
        im = torch.full(shape, value.imag, dtype=dt, device=device)
        return self._result(out, re, im)

    def _setitem(self, shown, args):
        """z[index] = value of a complex z: the same write into its real and imaginary parts (a real or numeric
        value writes zeros into the imaginary part). Returns None, as __setitem__ does."""
        z, index, value = args[0], args[1], args[2]
        if not z.is_complex():
            raise UserError(f"{self.tracer.where()}: {shown} writes a complex value into a real tensor (it would drop "
                            f"the imaginary part); take .real of it first")
        re, im = self.of(z)
        vr, vi = self._operand(value)
        re[index] = vr
        im[index] = 0.0 if vi is None else vi
        return None

    def _from_real(self, name, args, kwargs, out):
        if name == "torch.view_as_complex":
            x = args[0] if args else kwargs["input"]
            return self._result(out, x.select(-1, 0), x.select(-1, 1))
        first = args[0] if args else kwargs.get("abs", kwargs.get("real"))
        second = args[1] if len(args) > 1 else kwargs.get("angle", kwargs.get("imag"))
        if name == "torch.polar":
            return self._result(out, first * torch.cos(second), first * torch.sin(second))
        return self._result(out, first, second)  # torch.complex(real, imag)

    def _operand(self, v):
        """(re, im) of an operand: im is None for a real tensor or number."""
        if isinstance(v, torch.Tensor):
            return self.of(v) if v.is_complex() else (v, None)
        if isinstance(v, complex):
            return v.real, v.imag
        return v, None

    def _binary(self, func, shown, args, kwargs, out):
        op, swapped = BINARY[func]
        x = args[0]
        y = args[1] if len(args) > 1 else kwargs.get("other", kwargs.get("mat2"))
        if kwargs.get("alpha", 1) != 1 or kwargs.get("rounding_mode") is not None:
            raise UserError(f"{self.tracer.where()}: {shown} on a complex tensor with alpha or rounding_mode")
        if swapped:
            x, y = y, x
        (a, b), (c, d) = self._operand(x), self._operand(y)
        if op == "matmul" and (b is None) != (d is None):
            raise UserError(f"{self.tracer.where()}: {shown} of a complex and a real tensor (torch refuses it on the "
                            f"GPU and the CPU too: make both complex)")
        times = (lambda p, q: p @ q) if op == "matmul" else (lambda p, q: p * q)
        if op == "add":
            return self._result(out, a + c, b if d is None else (d if b is None else b + d))
        if op == "sub":
            return self._result(out, a - c, b if d is None else (-d if b is None else b - d))
        if op in ("mul", "matmul"):
            if d is None:
                return self._result(out, times(a, c), times(b, c))
            if b is None:
                return self._result(out, times(a, c), times(a, d))
            return self._result(out, times(a, c) - times(b, d), times(a, d) + times(b, c))
        # div: z / w = z * conj(w) / |w|^2
        if d is None:
            return self._result(out, a / c, b / c)
        den = c * c + d * d
        if b is None:
            return self._result(out, a * c / den, -a * d / den)
        return self._result(out, (a * c + b * d) / den, (b * c - a * d) / den)

    def _einsum(self, shown, args, kwargs, out):
        """torch.einsum over complex and real operands: multilinear, so the sum over every choice of part (re or
        im) of each complex operand of the real einsum of those parts, times i to the number of imaginary parts
        chosen (+1, +i, -1, -i: to the real or imaginary result, added or subtracted)."""
        if kwargs or len(args) < 2:
            raise UserError(f"{self.tracer.where()}: {shown} on complex tensors needs einsum(equation, *operands)")
        eq, operands = args[0], list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else list(args[1:])
        parts = [self._operand(t) for t in operands]
        sums = [None, None]  # real, imaginary
        for choice in range(1 << len(parts)):
            picks = [(p[0], 0) if not (choice >> j) & 1 else (p[1], 1) for j, p in enumerate(parts)]
            if any(t is None for t, _ in picks):
                continue  # an imaginary part of a real operand
            turns = sum(k for _, k in picks) % 4  # powers of i
            term = torch.einsum(eq, *[t for t, _ in picks])
            which, negate = turns % 2, turns >= 2
            if sums[which] is None:
                sums[which] = -term if negate else term
            else:
                sums[which] = sums[which] - term if negate else sums[which] + term
        re, im = sums
        return self._result(out, re if re is not None else 0.0, im if im is not None else 0.0)

    def _unary(self, op, z, out):
        a, b = self.of(z)
        if op == "view_as_real":
            return torch.stack([a, b], -1)
        if op == "real":
            return a
        if op == "imag":
            return b
        if op == "abs":
            return torch.hypot(a, b)
        if op == "angle":
            return torch.atan2(b, a)
        if op == "exp":
            m = torch.exp(a)
            return self._result(out, m * torch.cos(b), m * torch.sin(b))
        den = a * a + b * b  # reciprocal
        return self._result(out, a / den, -b / den)
