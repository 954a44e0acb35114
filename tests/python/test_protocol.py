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


def test_loose_tolerance_warnings_in_chunks_agree_with_whole_tensors():
    small = torch.full((64,), 1e-3)
    x = torch.randn(8, 8)
    near = x + 1e-3
    big = torch.randn(64) * 10
    whole = harness.loose_tolerance_warnings([small, big, near], [x], 1e-2, 1e-2)
    assert harness.loose_tolerance_warnings([small, big, near], [x], 1e-2, 1e-2, chunk=5) == whole
    small[37] = 1.0  # one element past the tolerance, in a late chunk
    assert not any("output 0" in w for w in harness.loose_tolerance_warnings([small], [], 1e-2, 1e-2, chunk=5))


@pytest.mark.parametrize("chunk", [None, 1, 7, 1000])
def test_compare_in_chunks_gives_the_whole_tensors_verdict_and_errors(chunk):
    """The comparison runs chunk by chunk (float64 temporaries of a bounded size); verdict, maximum
    absolute and relative errors are those of the whole outputs, wherever the worst element lies."""
    torch.manual_seed(0)
    ref = torch.randn(10, 13)
    cand = ref + 1e-5 * torch.randn(10, 13)
    ok, a, r, msg = harness.compare([ref], [cand], 1e-4, 1e-4, chunk=chunk)
    diff = (cand.double() - ref.double()).abs()
    assert ok and msg == ""
    assert a == pytest.approx(float(diff.max())) and r == pytest.approx(float((diff / ref.double().abs()).max()))

    worse = cand.clone()
    worse[9, 12] += 0.5  # the last element: the last chunk
    ok, a, r, msg = harness.compare([ref], [worse], 1e-4, 1e-4, chunk=chunk)
    assert not ok and "output 0 differs" in msg and a == pytest.approx(0.5, rel=1e-3)

    early = cand.clone()
    early[0, 0] += 0.25  # wrong in the first chunk; the errors still cover every chunk
    early[9, 12] += 0.5
    ok, a, r, _ = harness.compare([ref], [early], 1e-4, 1e-4, chunk=chunk)
    assert not ok and a == pytest.approx(0.5, rel=1e-3)

    nan = cand.clone()
    nan[5, 5] = float("nan")
    ok, a, r, msg = harness.compare([ref], [nan], 1e-4, 1e-4, chunk=chunk)
    assert not ok and "NaN or Inf where the reference has none" in msg and a is None

    both_inf_ref, both_inf_cand = ref.clone(), cand.clone()
    both_inf_ref[3, 3] = both_inf_cand[3, 3] = float("inf")  # the same infinity in both: close
    assert harness.compare([both_inf_ref], [both_inf_cand], 1e-4, 1e-4, chunk=chunk)[0]

    strided = cand.t().contiguous().t()  # another layout, the same values
    assert harness.compare([ref], [strided], 1e-4, 1e-4, chunk=chunk)[0]
    empty = torch.empty(0, 3)
    assert harness.compare([empty], [empty.clone()], 1e-4, 1e-4, chunk=chunk) == (True, 0.0, 0.0, "")
