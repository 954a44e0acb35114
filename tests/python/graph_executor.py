# A reference executor for tests: runs kforge graph JSON with torch ops on the CPU, to compare with the model.
"""run_graph(graph, values) evaluates every node with the torch function that defines the op; check_problem
imports nothing itself: it builds the problem's Model on the CPU (seeded), feeds its parameters and random
inputs to the graph by id and compares each output with the model's own forward. It covers the ops the
importer tests produce; an op it lacks raises KeyError naming it."""
import importlib.util
import itertools
import operator
import math

import torch
import torch.nn.functional as F

_counter = itertools.count()
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
          "int64": torch.int64, "int32": torch.int32, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}


def _bound(x, v):
    """A clamp bound as the node's graph has it (a float attr) in x's own type: an integer tensor's clamp by
    whole numbers stays integer, as torch's clamp(int_tensor, -3, 3)."""
    if v is not None and not x.dtype.is_floating_point and float(v).is_integer():
        return int(v)
    return v


def num(v):
    """Attr numbers; the three non-finite values travel as strings."""
    return float(v) if isinstance(v, str) else v


def _binary(fn):
    def run(ins, at):
        a, b = ins[0], ins[1] if len(ins) > 1 else None
        if b is None:
            s = num(at["scalar"])
            return fn(s, a) if at.get("reverse") else fn(a, s)
        return fn(a, b)
    return run


def _reduce(fn):
    def run(ins, at):
        x, d = ins[0], at["dims"] or list(range(ins[0].dim()))
        return fn(x, d, at["keepdim"]) if d else x
    return run


def _arg(fn):
    def run(ins, at):
        return fn(ins[0]) if at["dim"] is None else fn(ins[0], at["dim"], at["keepdim"])
    return run


def _pool(x, at, kind):
    r = len(at["kernel_size"])
    if kind == "max":
        fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[r]
        return fn(x, at["kernel_size"], at["stride"], at["padding"], at["dilation"], at["ceil_mode"])
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[r]
    if r == 1:
        return fn(x, at["kernel_size"], at["stride"], at["padding"], at["ceil_mode"], at["count_include_pad"])
    return fn(x, at["kernel_size"], at["stride"], at["padding"], at["ceil_mode"], at["count_include_pad"],
              at["divisor_override"])


def _adaptive(x, at, kind):
    r = len(at["output_size"])
    fns = {"avg": {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d},
           "max": {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}}
    return fns[kind][r](x, at["output_size"])


def _unfold(x, at):
    return x.unfold(at["dim"], at["size"], at["step"])


def _sdpa(ins, at):
    q, k, v, mask = ins
    s = 1.0 / math.sqrt(q.size(-1)) if at["scale"] is None else at["scale"]
    w = (q @ k.transpose(-2, -1)) * s
    if at["is_causal"]:
        keep = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
        w = w.masked_fill(~keep, float("-inf"))
    if mask is not None:
        w = w.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else w + mask
    return torch.softmax(w, -1) @ v


def _div(x, y, mode):
    return torch.div(torch.as_tensor(x), torch.as_tensor(y), rounding_mode=mode)


def _mode_pad(x, pad, mode):
    """F.pad's modes take (N, C, spatial...) inputs padded in their spatial dims only: other inputs are
    viewed that way (leading dims folded into one batch dim)."""
    k = len(pad) // 2
    lead = list(x.shape[:x.dim() - k])
    y = x.reshape([-1, 1] + list(x.shape[x.dim() - k:]))
    y = F.pad(y, pad, mode=mode)
    return y.reshape(lead + list(y.shape[2:]))


def _upsample(x, a, linear):
    """The op's definition, through ATen with the output size and the scale torch would pass on."""
    size, k = a["size"], len(a["size"])
    scales = [a["scale"]] * k
    if not linear:
        fn = {1: torch.ops.aten.upsample_nearest1d, 2: torch.ops.aten.upsample_nearest2d,
              3: torch.ops.aten.upsample_nearest3d}[k]
        return fn(x, size, *scales)
    fn = {1: torch.ops.aten.upsample_linear1d, 2: torch.ops.aten.upsample_bilinear2d,
          3: torch.ops.aten.upsample_trilinear3d}[k]
    return fn(x, size, a["align_corners"], *scales)


def _bicubic(x, a):
    """upsample_bicubic through ATen with the output size and the scale torch would pass on."""
    return torch.ops.aten.upsample_bicubic2d(x, a["size"], a["align_corners"], a["scale"], a["scale"])


_GRID_MODES = {"bilinear": 0, "nearest": 1}
_GRID_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def _last(k):
    """The last k dims (of a complex tensor: fft_c2c and fft_c2r hold it as view_as_real's layout)."""
    return list(range(-k, 0))


def _last_sizes(x, k, last):
    """fft_c2r's signal sizes: the complex dims' sizes (before x's trailing pair dim), the last one `last`."""
    return [int(v) for v in x.shape[-k - 1:-2]] + [last]


def _topk(x, a):
    """The first k of the stable sort (the order kforge defines for ties)."""
    s = torch.sort(x, dim=a["dim"], descending=a["largest"], stable=True)
    return s.values.narrow(a["dim"], 0, a["k"]), s.indices.narrow(a["dim"], 0, a["k"])


OPS = {
    "relu": lambda i, a: torch.relu(i[0]), "sigmoid": lambda i, a: torch.sigmoid(i[0]),
    "tanh": lambda i, a: torch.tanh(i[0]), "exp": lambda i, a: torch.exp(i[0]), "log": lambda i, a: torch.log(i[0]),
    "abs": lambda i, a: torch.abs(i[0]), "neg": lambda i, a: torch.neg(i[0]), "sqrt": lambda i, a: torch.sqrt(i[0]),
    "rsqrt": lambda i, a: torch.rsqrt(i[0]), "reciprocal": lambda i, a: torch.reciprocal(i[0]),
    "erf": lambda i, a: torch.erf(i[0]), "sign": lambda i, a: torch.sign(i[0]), "silu": lambda i, a: F.silu(i[0]),
    "mish": lambda i, a: F.mish(i[0]), "selu": lambda i, a: torch.selu(i[0]), "softsign": lambda i, a: F.softsign(i[0]),
    "hardsigmoid": lambda i, a: F.hardsigmoid(i[0]), "hardswish": lambda i, a: F.hardswish(i[0]),
    "gelu": lambda i, a: F.gelu(i[0], approximate=a["approximate"]),
    "leaky_relu": lambda i, a: F.leaky_relu(i[0], num(a["negative_slope"])),
    "elu": lambda i, a: F.elu(i[0], num(a["alpha"])),
    "hardtanh": lambda i, a: F.hardtanh(i[0], num(a["min_val"]), num(a["max_val"])),
    "softplus": lambda i, a: F.softplus(i[0], num(a["beta"]), num(a["threshold"])),
    "clamp": lambda i, a: torch.clamp(i[0], *[_bound(i[0], num(a[k])) for k in ("min", "max")]),
    "pow_scalar": lambda i, a: torch.pow(i[0], num(a["exponent"])),
    "identity": lambda i, a: i[0],
    "dropout": lambda i, a: F.dropout(i[0], num(a["p"]), a["training"]),
    "cast": lambda i, a: i[0].to(DTYPES[a["dtype"]]),
    "add": _binary(torch.add), "sub": _binary(torch.sub), "mul": _binary(torch.mul), "div": _binary(torch.div),
    "maximum": _binary(lambda x, y: torch.maximum(torch.as_tensor(x), torch.as_tensor(y))),
    "minimum": _binary(lambda x, y: torch.minimum(torch.as_tensor(x), torch.as_tensor(y))),
    "pow": _binary(torch.pow),
    "eq": _binary(torch.eq), "ne": _binary(torch.ne), "lt": _binary(torch.lt), "le": _binary(torch.le),
    "gt": _binary(torch.gt), "ge": _binary(torch.ge),
    "where": lambda i, a: torch.where(i[0], i[1], i[2]),
    "logical_not": lambda i, a: torch.logical_not(i[0]),
    "atan2": _binary(lambda x, y: torch.atan2(torch.as_tensor(x), torch.as_tensor(y))),
    "hypot": _binary(lambda x, y: torch.hypot(torch.as_tensor(x), torch.as_tensor(y))),
    **{op: (lambda fn: lambda i, a: fn(i[0]))(getattr(torch, op)) for op in (
        "sin cos tan asin acos atan sinh cosh asinh acosh atanh log1p expm1 log2 log10 exp2 erfc erfinv lgamma floor "
        "ceil round trunc frac isnan isinf isposinf isneginf").split()},
    **{op: (lambda fn: lambda i, a: fn(i[0]))(getattr(torch.special, op)) for op in (
        "digamma i0 i0e i1 i1e erfcx ndtri").split()},
    "polygamma": lambda i, a: torch.special.polygamma(a["n"], i[0]),
    "zeta": _binary(lambda x, y: torch.special.zeta(x, y)),
    "logical_and": lambda i, a: torch.logical_and(i[0], i[1]),
    "logical_or": lambda i, a: torch.logical_or(i[0], i[1]),
    "sum": _reduce(torch.sum), "mean": _reduce(torch.mean), "amax": _reduce(torch.amax),
    "amin": _reduce(torch.amin), "logsumexp": _reduce(torch.logsumexp),
    "prod": lambda i, a: torch.prod(i[0]) if not a["dims"] else torch.prod(i[0], a["dims"][0], a["keepdim"]),
    "var": lambda i, a: torch.var(i[0], a["dims"] or None, correction=a["correction"], keepdim=a["keepdim"]),
    "norm": lambda i, a: torch.norm(i[0], num(a["p"]), a["dims"] or None, a["keepdim"]),
    "argmax": _arg(torch.argmax), "argmin": _arg(torch.argmin),
    "softmax": lambda i, a: torch.softmax(i[0], a["dim"]),
    "log_softmax": lambda i, a: torch.log_softmax(i[0], a["dim"]),
    "layer_norm": lambda i, a: F.layer_norm(i[0], a["normalized_shape"], i[1], i[2], num(a["eps"])),
    "instance_norm": lambda i, a: F.instance_norm(i[0], i[3], i[4], i[1], i[2], a["use_input_stats"],
                                                  num(a["momentum"]), num(a["eps"])),
    "group_norm": lambda i, a: F.group_norm(i[0], a["num_groups"], i[1], i[2], num(a["eps"])),
    "batch_norm": lambda i, a: F.batch_norm(i[0], i[3], i[4], i[1], i[2], a["training"], num(a["momentum"]),
                                            num(a["eps"])),
    "matmul": lambda i, a: torch.matmul(i[0], i[1]),
    "linear": lambda i, a: F.linear(i[0], i[1], i[2]),
    "einsum": lambda i, a: torch.einsum(a["equation"], *i),
    "conv": lambda i, a: {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[len(a["stride"])](
        i[0], i[1], i[2], a["stride"], a["padding"], a["dilation"], a["groups"]),
    "conv_transpose": lambda i, a: {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[
        len(a["stride"])](i[0], i[1], i[2], a["stride"], a["padding"], a["output_padding"], a["groups"],
                          a["dilation"]),
    "scaled_dot_product_attention": _sdpa,
    "max_pool": lambda i, a: _pool(i[0], a, "max"), "avg_pool": lambda i, a: _pool(i[0], a, "avg"),
    "adaptive_avg_pool": lambda i, a: _adaptive(i[0], a, "avg"),
    "adaptive_max_pool": lambda i, a: _adaptive(i[0], a, "max"),
    "cumsum": lambda i, a: torch.cumsum(i[0], a["dim"]), "cumprod": lambda i, a: torch.cumprod(i[0], a["dim"]),
    "logcumsumexp": lambda i, a: torch.logcumsumexp(i[0], a["dim"]),
    "reshape": lambda i, a: i[0].reshape(a["shape"]),
    "permute": lambda i, a: i[0].permute(a["dims"]),
    "expand": lambda i, a: i[0].expand(a["shape"]),
    "slice": lambda i, a: i[0][(slice(None),) * a["dim"] + (slice(a["start"], a["end"], a["step"]),)],
    "select": lambda i, a: i[0].select(a["dim"], a["index"]),
    "flip": lambda i, a: torch.flip(i[0], a["dims"]),
    "cat": lambda i, a: torch.cat(i, a["dim"]), "stack": lambda i, a: torch.stack(i, a["dim"]),
    "diag": lambda i, a: torch.diag(i[0], a["diagonal"]),
    "tril": lambda i, a: torch.tril(i[0], a["diagonal"]), "triu": lambda i, a: torch.triu(i[0], a["diagonal"]),
    "full": lambda i, a: torch.full(a["shape"], num(a["value"]), dtype=DTYPES[a["dtype"]]),
    "unfold": lambda i, a: _unfold(i[0], a),
    "constant_pad": lambda i, a: F.pad(i[0], a["pad"], value=num(a["value"])),
    "embedding": lambda i, a: F.embedding(i[1], i[0]),
    "index_select": lambda i, a: torch.index_select(i[0], a["dim"], i[1]),
    "gather": lambda i, a: torch.gather(i[0], a["dim"], i[1]),
    "floor_divide": _binary(lambda x, y: _div(x, y, "floor")), "trunc_divide": _binary(lambda x, y: _div(x, y, "trunc")),
    "remainder": _binary(lambda x, y: torch.remainder(torch.as_tensor(x), torch.as_tensor(y))),
    "fmod": _binary(lambda x, y: torch.fmod(torch.as_tensor(x), torch.as_tensor(y))),
    "bitwise_and": _binary(lambda x, y: torch.bitwise_and(torch.as_tensor(x), torch.as_tensor(y))),
    "bitwise_or": _binary(lambda x, y: torch.bitwise_or(torch.as_tensor(x), torch.as_tensor(y))),
    "bitwise_xor": _binary(lambda x, y: torch.bitwise_xor(torch.as_tensor(x), torch.as_tensor(y))),
    "bitwise_not": lambda i, a: torch.bitwise_not(i[0]),
    "reflect_pad": lambda i, a: _mode_pad(i[0], a["pad"], "reflect"),
    "replicate_pad": lambda i, a: _mode_pad(i[0], a["pad"], "replicate"),
    "circular_pad": lambda i, a: _mode_pad(i[0], a["pad"], "circular"),
    "upsample_nearest": lambda i, a: _upsample(i[0], a, False),
    "upsample_linear": lambda i, a: _upsample(i[0], a, True),
    "upsample_bicubic": lambda i, a: _bicubic(i[0], a),
    "grid_sample": lambda i, a: torch.grid_sampler_2d(i[0], i[1], _GRID_MODES[a["mode"]],
                                                      _GRID_PADDINGS[a["padding_mode"]], a["align_corners"]),
    "sort": lambda i, a: torch.sort(i[0], dim=a["dim"], descending=a["descending"], stable=True).values,
    "argsort": lambda i, a: torch.sort(i[0], dim=a["dim"], descending=a["descending"], stable=True).indices,
    "topk": lambda i, a: _topk(i[0], a)[0], "topk_indices": lambda i, a: _topk(i[0], a)[1],
    "cummax": lambda i, a: torch.cummax(i[0], a["dim"]).values,
    "cummin": lambda i, a: torch.cummin(i[0], a["dim"]).values,
    "cummax_indices": lambda i, a: torch.cummax(i[0], a["dim"]).indices,
    "cummin_indices": lambda i, a: torch.cummin(i[0], a["dim"]).indices,
    "scatter": lambda i, a: torch.scatter(i[0], a["dim"], i[1], i[2]),
    "scatter_value": lambda i, a: torch.scatter(i[0], a["dim"], i[1], num(a["value"])),
    "scatter_add": lambda i, a: torch.scatter_add(i[0], a["dim"], i[1], i[2]),
    "fft_r2c": lambda i, a: torch.view_as_real(torch.fft.rfftn(i[0], dim=_last(a["ndim"]))),
    "fft_c2c": lambda i, a: torch.view_as_real((torch.fft.ifftn if a["inverse"] else torch.fft.fftn)(
        torch.view_as_complex(i[0].contiguous()), dim=_last(a["ndim"]), norm="forward" if a["inverse"] else "backward")),
    "fft_c2r": lambda i, a: torch.fft.irfftn(torch.view_as_complex(i[0].contiguous()),
                                             s=_last_sizes(i[0], a["ndim"], a["last_dim_size"]),
                                             dim=_last(a["ndim"]), norm="forward"),
    "scatter_amax": lambda i, a: torch.scatter_reduce(i[0], a["dim"], i[1], i[2], "amax"),
    "scatter_amin": lambda i, a: torch.scatter_reduce(i[0], a["dim"], i[1], i[2], "amin"),
    "scatter_prod": lambda i, a: torch.scatter_reduce(i[0], a["dim"], i[1], i[2], "prod"),
    "one_hot": lambda i, a: F.one_hot(i[0], a["num_classes"]),
    "embedding_bag": lambda i, a: F.embedding_bag(i[1], i[0], i[2], mode=a["mode"],
                                                  include_last_offset=a["include_last_offset"]),
    "fold": lambda i, a: F.fold(i[0], a["output_size"], a["kernel_size"], a["dilation"], a["padding"], a["stride"]),
}


def _rnn(ins, a):
    """The `rnn` op: torch's own _VF function on the operands, results packed as the op packs them."""
    x, h0, c0, weights = ins[0], ins[1], ins[2], ins[3:]
    d = 2 if a["bidirectional"] else 1
    batch = x.shape[0] if a["batch_first"] else x.shape[1]
    zeros = lambda: torch.zeros(a["num_layers"] * d, batch, a["hidden_size"], dtype=x.dtype)  # noqa: E731
    h0 = zeros() if h0 is None else h0
    settings = (a["has_biases"], a["num_layers"], 0.0, False, a["bidirectional"], a["batch_first"])
    if a["mode"] == "lstm":
        out = torch.lstm(x, [h0, zeros() if c0 is None else c0], weights, *settings)
    else:
        out = getattr(torch, a["mode"])(x, h0, weights, *settings)
    return torch.cat([t.reshape(-1) for t in out])


OPS["rnn"] = _rnn


def run_graph(graph, values):
    """values: {input or param id: tensor}; returns the output tensors in order."""
    env = dict(values)
    for n in graph["nodes"]:
        ins = [None if i is None else env[i] for i in n["inputs"]]
        out = OPS[n["op"]](ins, n["attrs"])
        assert list(out.shape) == n["shape"], (n, list(out.shape))
        assert out.dtype == DTYPES[n["dtype"]], (n, out.dtype)
        env[n["id"]] = out
    return [env[o] for o in graph["outputs"]]


def load(path):
    spec = importlib.util.spec_from_file_location(f"_graph_executor_problem_{next(_counter)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _flatten(result):
    if isinstance(result, torch.Tensor):
        return [result]
    return [t for r in result for t in _flatten(r)]


def _param_value(p, t):
    """A complex parameter is its real view in the graph (shape + [2]), as the ModelNew passes its memory."""
    t = t.detach()
    return torch.view_as_real(t) if p.get("complex") else t


def check_problem(path, graph, seed=0, trials=2, atol=1e-5, rtol=1e-4):
    """The graph against the problem's own forward on the CPU, for `trials` random input sets."""
    module = load(path)
    torch.manual_seed(seed)
    model = module.Model(*module.get_init_inputs())
    model.train(graph["mode"] == "train")
    tensors = dict(model.named_parameters())
    tensors.update(dict(model.named_buffers()))
    tensors.update({p["path"]: operator.attrgetter(p["path"])(model) for p in graph["params"] if p["kind"] == "attribute"})
    for trial in range(trials):
        torch.manual_seed(seed + 1 + trial)
        inputs = list(module.get_inputs())
        values = {p["id"]: _param_value(p, tensors[p["path"]]) for p in graph["params"]}
        for arg, x in zip(graph["forward_args"], inputs):
            if "input" in arg:
                values[arg["input"]] = x
        with torch.no_grad():
            got = run_graph(graph, values)
            want = _flatten(model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
            torch.testing.assert_close(g, w, atol=atol, rtol=rtol, equal_nan=True)  # NaN where the model has NaN
