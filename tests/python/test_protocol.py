"""The measurement protocol on the harness's side: its tables agree with the C++ registries
(src/sandbox/*.def, the one definition), requests carry the whole object, and the checks that flag a
tolerance too loose for an output's scale."""
import os
import re
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../python"))
from kforge import harness  # noqa: E402
from kforge.protocol import (BASELINES, DEFAULT_BASELINES, NAMED, TIMING_METHODS, protocol_from,  # noqa: E402
                             timing_from)

SANDBOX = os.path.join(os.path.dirname(__file__), "../../src/sandbox")


def def_lines(name, macro):
    with open(os.path.join(SANDBOX, name)) as f:
        return [m.group(1) for m in re.finditer(r"^%s\((.*)\)\s*$" % macro, f.read(), re.M)]


def test_named_protocols_match_protocols_def():
    rows = {}
    for line in def_lines("protocols.def", "KF_PROTOCOL"):
        name, mode, atol, rtol, sets = [p.strip().strip('"') for p in line.split(",")[:5]]
        rows[name] = (mode, float(atol), float(rtol), int(sets))
    assert rows == NAMED


def test_timing_methods_and_baselines_match_their_registries():
    methods = tuple(l.split(",")[0].strip('"') for l in def_lines("timing_methods.def", "KF_TIMING_METHOD"))
    baselines = tuple(l.split(",")[0].strip('"') for l in def_lines("baselines.def", "KF_BASELINE"))
    assert methods == TIMING_METHODS and baselines == BASELINES
    assert set(DEFAULT_BASELINES) <= set(BASELINES)


def test_a_request_carries_the_whole_protocol():
    p = protocol_from({"name": "custom", "mode": "train", "atol": 3e-3, "rtol": 1e-3, "input_sets": 2})
    assert (p.mode, p.atol, p.rtol, p.input_sets) == ("train", 3e-3, 1e-3, 2)
    assert protocol_from("kernelbench").atol == 1e-4
    with pytest.raises(ValueError, match="unknown protocol"):
        protocol_from("loose")
    with pytest.raises(ValueError, match="malformed"):
        protocol_from({"name": "x", "mode": "sideways", "atol": 1, "rtol": 1})


def test_timing_requests():
    assert timing_from(None).baselines == DEFAULT_BASELINES
    assert timing_from(None, compile_flag=False).baselines == ("eager",)  # the legacy flags
    t = timing_from({"method": "wall", "fresh_inputs": True, "baselines": ["compile_reduce_overhead"]})
    assert (t.method, t.fresh_inputs, t.baselines) == ("wall", True, ("compile_reduce_overhead",))
    with pytest.raises(ValueError, match="unknown timing method"):
        timing_from({"method": "stopwatch"})
    with pytest.raises(ValueError, match="unknown baselines"):
        timing_from({"baselines": ["tensorrt"]})


def test_loose_tolerance_warnings():
    small = torch.full((64,), 1e-3)                      # zeros pass at atol 1e-2
    big = torch.randn(64) * 10                           # resolved
    x = torch.randn(8, 8)
    near = x + 1e-3                                      # the input passes through within tolerance
    w = harness.loose_tolerance_warnings([small, big, near], [x], 1e-2, 1e-2)
    assert len(w) == 2 and "output 0 would also pass as all zeros" in w[0] and "output 2" in w[1] and "input 0" in w[1]
    assert harness.loose_tolerance_warnings([small, big, near], [x], 1e-4, 1e-4) == []
    assert harness.loose_tolerance_warnings([torch.zeros(3, dtype=torch.int64)], [], 1e-2, 1e-2) == []
