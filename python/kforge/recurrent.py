# Recurrent layers kept whole: torch.lstm / gru / rnn_tanh / rnn_relu (under nn.LSTM / GRU / RNN) as one `rnn` node.
"""nn.LSTM, nn.GRU and nn.RNN call one C++ function each (`_VF.lstm`, `_VF.gru`, `_VF.rnn_tanh`, `_VF.rnn_relu`)
with the input, the initial states, the module's `_flat_weights` and its settings. The importer meets that call
without a rule (importer.Tracer.call_unknown -> aten_capture.capture), and `keep_whole` gets the first word: a
call it can express becomes one `rnn` node, run by cuDNN's RNN API as torch runs it (docs/graph-format.md,
"Recurrent layers kept whole"); anything else returns None and is decomposed by make_fx as before, one node per
time step and gate, which is correct but slow.

Kept whole: a float32, 3-D (not packed) input with float32 weights in the layout of `proj_size == 0`, no dropout
in effect (dropout 0, or the module in eval mode), every operand a value the graph has. The `rnn` node has one
1-D output that packs `output`, `h_n` and, for an LSTM, `c_n` one after another (the IR has one output per
node); each result is a `slice` of it and a `reshape`. An initial state that is all zeros (nn.LSTM makes one
with torch.zeros when none is given) is left out: cuDNN takes a missing state as zeros.
"""
import torch

from .import_ops import shape

# torch's C++ entry point -> (the op's mode, whether it returns a cell state)
MODES = {"lstm": ("lstm", True), "gru": ("gru", False), "rnn_tanh": ("rnn_tanh", False),
         "rnn_relu": ("rnn_relu", False)}
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _settings(func, args, kwargs):
    """(mode, x, states, weights, has_biases, num_layers, dropout, train, bidirectional, batch_first) of a
    non-packed call, or None (a packed sequence, keywords, another function)."""
    name = getattr(func, "__name__", None)
    if name not in MODES or kwargs or len(args) != 9 or not isinstance(args[0], torch.Tensor):
        return None
    # Packed: (data, batch_sizes, hx, params, ...), whose third argument is hx, not the weight list.
    if not isinstance(args[2], (list, tuple)) or not isinstance(args[3], bool):
        return None
    x, hx, weights, has_biases, layers, dropout, train, bidirectional, batch_first = args
    states = list(hx) if isinstance(hx, (list, tuple)) else [hx]
    return name, x, states, list(weights), has_biases, layers, dropout, train, bidirectional, batch_first


def _expected_weights(gates, hidden, input_size, layers, directions, has_biases):
    out = []
    for layer in range(layers):
        width = input_size if layer == 0 else directions * hidden
        for _ in range(directions):
            out += [[gates * hidden, width], [gates * hidden, hidden]]
            if has_biases:
                out += [[gates * hidden], [gates * hidden]]
    return out


def _zeros_state(tracer, t):
    """Whether t is the value of a `full` node of zeros (torch.zeros made by nn.LSTM for a missing state)."""
    vid = tracer.value_of(t)
    for n in reversed(tracer.nodes):
        if n["id"] == vid:
            return n["op"] == "full" and n["attrs"].get("value") in (0, 0.0)
    return False


def keep_whole(tracer, func, args, kwargs, out):
    """Record the call as one `rnn` node and bind its results (returns `out`), or None to decompose it."""
    s = _settings(func, args, kwargs)
    if s is None or "rnn" not in tracer.schema:
        return None
    name, x, states, weights, has_biases, layers, dropout, train, bidirectional, batch_first = s
    mode, has_cell = MODES[name]
    tensors = [x, *states, *weights]
    if not all(isinstance(t, torch.Tensor) and t.dtype == torch.float32 for t in tensors):
        return None
    if x.dim() != 3 or len(states) != (2 if has_cell else 1) or (train and dropout > 0):
        return None
    if not all(tracer.bound(t) for t in tensors):
        return None  # a poisoned operand: the decomposition reports it where it is used
    directions = 2 if bidirectional else 1
    hidden = int(states[0].shape[-1])
    state = [layers * directions, int(x.shape[0 if batch_first else 1]), hidden]
    if any(shape(h) != state for h in states):
        return None  # proj_size > 0 (h is smaller than c), or shapes torch itself would refuse
    if [shape(w) for w in weights] != _expected_weights(GATES[mode], hidden, int(x.shape[2]), layers, directions,
                                                        has_biases):
        return None  # proj_size > 0 adds w_hr and narrows w_hh
    results = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(results) != (3 if has_cell else 2) or not all(isinstance(t, torch.Tensor) for t in results):
        return None
    loc = tracer.loc()
    sizes = [t.numel() for t in results]
    packed = tracer.run(torch.empty, [sum(sizes)], dtype=torch.float32, device="meta")
    ins = [tracer.value_of(x)]
    ins += [None if _zeros_state(tracer, h) else tracer.value_of(h) for h in states]
    if not has_cell:
        ins.append(None)
    ins += [tracer.value_of(w) for w in weights]
    attrs = {"mode": mode, "input_size": int(x.shape[2]), "hidden_size": hidden, "num_layers": int(layers),
             "bidirectional": bool(bidirectional), "batch_first": bool(batch_first), "has_biases": bool(has_biases)}
    packed_id = tracer.new_node("rnn", ins, attrs, packed, loc)
    start = 0
    for t, n in zip(results, sizes):
        piece = tracer.run(torch.empty, [n], dtype=torch.float32, device="meta")
        piece_id = tracer.new_node("slice", [packed_id], {"dim": 0, "start": start, "end": start + n, "step": 1},
                                   piece, loc)
        tracer.new_node("reshape", [piece_id], {"shape": shape(t)}, t, loc)
        start += n
    return out
