# torch.fft's transforms as kforge's fft_r2c / fft_c2c / fft_c2r nodes, on complex tensors held as real pairs.
"""torch.fft.fft, ifft, rfft, irfft and their 2-d and n-d forms (with n / s, dim and norm), called inside a model's
forward, written again as real torch code on the (re, im) parts of complex_pairs plus one kforge Fourier node: the
input cropped or zero-padded to the signal sizes (narrow, F.pad), the transformed dims moved last in the order given
(the last of them the one-sided one of rfft / irfft), the parts stacked into a trailing (re, im) dim (the node's
complex layout, as torch.view_as_real), the node (unnormalized, as cuFFT), its result's parts selected, moved
back, and scaled by torch's norm (1 / n, 1 / sqrt(n) or 1). Up to 3 dims per call (one cuFFT plan); float32 and
float64 (half precision is refused, as cuFFT's needs powers of two)."""
import inspect
import math

import torch
import torch.nn.functional as F

from . import import_ops as ops
from .import_ops import UserError

REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64}


def _one(input, n=None, dim=-1, norm=None, *, out=None):  # torch.fft.fft / ifft / rfft / irfft
    pass


def _two(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # fft2 / ifft2 / rfft2 / irfft2
    pass


def _many(input, s=None, dim=None, norm=None, *, out=None):  # fftn / ifftn / rfftn / irfftn
    pass


# torch.fft function -> (its signature, kind: "c2c" forward, "ic2c" inverse, "r2c", "c2r")
TRANSFORMS = {}
for _suffix, _sig in (("", _one), ("2", _two), ("n", _many)):
    for _base, _kind in (("fft", "c2c"), ("ifft", "ic2c"), ("rfft", "r2c"), ("irfft", "c2r")):
        _f = ops.resolve(f"torch.fft.{_base}{_suffix}")
        if _f is not None:
            TRANSFORMS[_f] = (inspect.signature(_sig), _kind)
SUPPORTED = "torch.fft.fft, ifft, rfft, irfft and their 2-d and n-d forms, torch.stft"


def _stft_sig(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
              normalized=False, onesided=None, return_complex=None, align_to_window=None):  # torch.stft / Tensor.stft
    pass


STFT = {f: inspect.signature(_stft_sig) for f in (ops.resolve("torch.stft"), ops.resolve("Tensor.stft")) if f}


def _dims_and_sizes(x, a, one_d):
    """The transformed dims (non-negative, in the order given) and their signal sizes (None: the input's)."""
    rank = x.dim()
    if one_d:
        dims, sizes = [a["dim"]], None if a["n"] is None else [a["n"]]
    else:
        sizes = None if a["s"] is None else list(a["s"])
        dims = a["dim"]
        if dims is None:
            dims = list(range(rank)) if sizes is None else list(range(rank - len(sizes), rank))
        dims = [dims] if isinstance(dims, int) else list(dims)
    dims = [d + rank if d < 0 else d for d in dims]
    if sizes is not None:
        sizes = [None if v == -1 else int(v) for v in sizes]
    return dims, sizes


def _resized(part, d, size):
    """part cropped (narrow) or zero-padded at the end (F.pad) along d to size, as torch's n / s do."""
    have = int(part.shape[d])
    if size == have:
        return part
    if size < have:
        return part.narrow(d, 0, size)
    pad = [0, 0] * (part.dim() - 1 - d) + [0, size - have]
    return F.pad(part, pad)


def transform(pairs, func, shown, args, kwargs, out):
    """The call func(*args, **kwargs) (its meta result `out`) on pairs' parts; returns what the model continues with."""
    sig, kind = TRANSFORMS[func]
    where = pairs.tracer.where()
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise UserError(f"{where}: {shown}: {e}") from None
    bound.apply_defaults()
    a = bound.arguments
    if a["out"] is not None:
        raise UserError(f"{where}: {shown} with out= (kforge writes its own outputs)")
    x, norm = a["input"], a["norm"]
    if norm not in (None, "backward", "forward", "ortho"):
        raise UserError(f"{where}: {shown} with norm={norm!r} (torch takes 'backward', 'forward' or 'ortho')")
    dims, sizes = _dims_and_sizes(x, a, sig.parameters["dim"].default == -1)
    if not 1 <= len(dims) <= 3 or len(set(dims)) != len(dims) or any(not 0 <= d < x.dim() for d in dims):
        raise UserError(f"{where}: {shown} over dims {dims} of a {x.dim()}-d tensor: kforge transforms 1 to 3 distinct "
                        f"dims per call (one cuFFT plan); call it once per group of dims")
    if sizes is not None and len(sizes) != len(dims):
        raise UserError(f"{where}: {shown}: s has {len(sizes)} sizes for {len(dims)} dims")
    real_dt = REAL_OF.get(x.dtype, torch.float16) if x.is_complex() else x.dtype
    if real_dt not in (torch.float32, torch.float64):
        if real_dt.is_floating_point or real_dt == torch.bool:
            raise UserError(f"{where}: {shown} of a {real_dt} tensor: kforge's Fourier transforms take float32 and "
                            f"float64 (cast first)")
        real_dt = torch.float32  # an integer input: torch promotes it to the default float type
    # The parts: (re, im) of a complex input, (x, None) of a real one.
    if x.is_complex():
        re, im = pairs.of(x)
    else:
        re, im = x.to(real_dt) if x.dtype != real_dt else x, None
    if kind != "r2c" and im is None:  # a real input to a complex transform: a zero imaginary part (torch's too)
        im = torch.zeros_like(re)
    # Signal sizes: the input's, or n / s; for c2r the last one defaults to 2 * (m - 1) and the input is cut to
    # size // 2 + 1 points there.
    signal = [int(re.shape[d]) for d in dims]
    if kind == "c2r":
        signal[-1] = 2 * (signal[-1] - 1)
    if sizes is not None:
        signal = [have if want is None else want for have, want in zip(signal, sizes)]
    if any(v < 1 for v in signal):
        raise UserError(f"{where}: {shown}: a signal size of {min(signal)} (torch needs at least 1 point)")
    for i, d in enumerate(dims):
        size = signal[i] // 2 + 1 if kind == "c2r" and i == len(dims) - 1 else signal[i]
        re = _resized(re, d, size)
        im = None if im is None else _resized(im, d, size)
    # The transformed dims last, in the order given.
    rest = [d for d in range(re.dim()) if d not in dims]
    perm = rest + dims
    moved = perm != list(range(re.dim()))
    if moved:
        re = re.permute(perm)
        im = None if im is None else im.permute(perm)
    node_in = re if im is None else torch.stack([re, im], -1)
    k = len(dims)
    op, attrs = {"r2c": ("fft_r2c", {"ndim": k}), "c2c": ("fft_c2c", {"ndim": k, "inverse": False}),
                 "ic2c": ("fft_c2c", {"ndim": k, "inverse": True}),
                 "c2r": ("fft_c2r", {"ndim": k, "last_dim_size": signal[-1]})}[kind]
    shape = list(node_in.shape)
    if kind == "r2c":
        shape[-1] = shape[-1] // 2 + 1
        shape.append(2)
    elif kind == "c2r":
        shape = shape[:-1]
        shape[-1] = signal[-1]
    result = pairs.tracer.run(torch.empty, shape, dtype=real_dt, device="meta")
    pairs.tracer.materialize([ops.Emit(op, [node_in], attrs, result)], result, pairs.tracer.loc(), shown)
    # torch's normalization: forward transforms divide by n for "forward", inverse ones for "backward" (the default).
    points, inverse = math.prod(signal), kind in ("ic2c", "c2r")
    if norm == "ortho":
        scale = 1.0 / math.sqrt(points)
    elif inverse:
        scale = 1.0 if norm == "forward" else 1.0 / points
    else:
        scale = 1.0 / points if norm == "forward" else 1.0
    back = [perm.index(d) for d in range(len(perm))]
    parts = [result] if kind == "c2r" else [result.select(-1, 0), result.select(-1, 1)]
    if moved:
        parts = [p.permute(back) for p in parts]
    if scale != 1.0:
        parts = [p * scale for p in parts]
    if kind == "c2r":
        if tuple(parts[0].shape) != tuple(out.shape) or parts[0].dtype != out.dtype:
            raise UserError(f"{where}: {shown}: kforge's transform gives {tuple(parts[0].shape)} {parts[0].dtype}, "
                            f"torch {tuple(out.shape)} {out.dtype}")
        return parts[0]
    return pairs._result(out, parts[0], parts[1])


def stft(pairs, func, shown, args, kwargs, out):
    """torch.stft of a real 1-d or 2-d signal as torch computes it: centered frames (the signal padded by n_fft // 2
    with pad_mode), frames of n_fft every hop_length (unfold), times the window (zero-padded to n_fft around its
    middle; none: all ones), a real (onesided) or complex transform of each frame, times n_fft^-1/2 when
    normalized; (..., frequencies, frames). return_complex=False gives view_as_real of it, as torch."""
    where = pairs.tracer.where()
    try:
        bound = STFT[func].bind(*args, **kwargs)
    except TypeError as e:
        raise UserError(f"{where}: {shown}: {e}") from None
    bound.apply_defaults()
    a = bound.arguments
    x, n_fft = a["input"], int(a["n_fft"])
    if x.is_complex() or x.dim() not in (1, 2):
        raise UserError(f"{where}: {shown} of a {'complex' if x.is_complex() else f'{x.dim()}-d'} signal (kforge "
                        f"takes a real 1-d or 2-d one)")
    if a["align_to_window"]:
        raise UserError(f"{where}: {shown} with align_to_window=True (kforge centres the window in the frame)")
    hop = int(a["hop_length"] or n_fft // 4)
    win = int(a["win_length"] or n_fft)
    one = x.dim() == 1
    if one:
        x = x.unsqueeze(0)
    if a["center"]:
        pad = n_fft // 2
        x = F.pad(x.unsqueeze(1), (pad, pad), mode=a["pad_mode"]).squeeze(1)
    frames = x.unfold(-1, n_fft, hop)
    window = a["window"]
    if window is not None:
        if win < n_fft:
            left = (n_fft - win) // 2
            window = F.pad(window, (left, n_fft - win - left))
        frames = frames * window
    onesided = a["onesided"] if a["onesided"] is not None else True
    spec = torch.fft.rfft(frames) if onesided else torch.fft.fft(frames)
    if a["normalized"]:
        spec = spec * n_fft ** -0.5
    spec = spec.transpose(-1, -2)
    if one:
        spec = spec.squeeze(0)
    if a["return_complex"] is False:
        return torch.view_as_real(spec)
    return spec
