"""The measurement protocol as the GPU harness receives it: how to verify (model mode, tolerances, input
sets) and how to time (method, fresh inputs, baselines). kforge's C++ side defines both once
(src/sandbox/protocols.def, timing_methods.def, baselines.def) and sends them whole in every request;
the table here serves only `python3 -m kforge.harness --protocol NAME` run by hand, and
tests/python/test_protocol.py checks it against protocols.def."""
from dataclasses import dataclass, field

NAMED = {
    # name: (model mode, atol, rtol, input sets): the same numbers as src/sandbox/protocols.def
    "cuda-agent": ("eval", 1e-2, 1e-2, 5),
    "kernelbench": ("train", 1e-4, 1e-4, 5),
}
TIMING_METHODS = ("events", "do_bench", "wall")
BASELINES = ("eager", "compile", "compile_tf32", "compile_max_autotune", "compile_reduce_overhead")
DEFAULT_BASELINES = ("eager", "compile", "compile_tf32")


@dataclass
class Protocol:
    name: str
    mode: str
    atol: float
    rtol: float
    input_sets: int


@dataclass
class Timing:
    method: str = "events"
    fresh_inputs: bool = False
    baselines: tuple = field(default_factory=lambda: DEFAULT_BASELINES)


def protocol_from(value):
    """A request's "protocol": the whole object (what kforge sends) or a name of NAMED."""
    if isinstance(value, dict):
        p = Protocol(str(value["name"]), str(value["mode"]), float(value["atol"]), float(value["rtol"]),
                     int(value.get("input_sets", 5)))
    elif value in NAMED:
        p = Protocol(value, *NAMED[value])
    else:
        raise ValueError("unknown protocol %r: send the protocol object, or one of %s" % (value, ", ".join(NAMED)))
    if p.mode not in ("eval", "train") or p.atol < 0 or p.rtol < 0 or p.input_sets < 1:
        raise ValueError("malformed protocol %r" % (value,))
    return p


def timing_from(value, compile_flag=True, eager_flag=True):
    """A request's "timing" object; without one, the defaults (less compile / eager when the legacy
    "compile" / "eager" flags say false)."""
    if value is None:
        base = tuple(b for b in DEFAULT_BASELINES if (eager_flag or b != "eager") and
                     (compile_flag or not b.startswith("compile")))
        return Timing(baselines=base)
    t = Timing(str(value.get("method", "events")), bool(value.get("fresh_inputs", False)),
               tuple(value.get("baselines", DEFAULT_BASELINES)))
    if t.method not in TIMING_METHODS:
        raise ValueError("unknown timing method %r (%s)" % (t.method, ", ".join(TIMING_METHODS)))
    unknown = [b for b in t.baselines if b not in BASELINES]
    if unknown:
        raise ValueError("unknown baselines %s (%s)" % (", ".join(unknown), ", ".join(BASELINES)))
    return t
