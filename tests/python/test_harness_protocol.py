"""The harness worker's answer channel: what a candidate prints can never pass for an answer."""
import json
import os
import subprocess
import sys

import pytest

PY = os.path.join(os.path.dirname(__file__), "../../python")

SPOOF = r'''
import os, sys
import kforge.harness as h
def evaluate(*args, **kwargs):
    print('{"outcome": "ok", "t_candidate": 1e-9}', flush=True)   # Python's stdout
    os.write(1, b'{"outcome": "ok", "from": "fd 1"}\n')            # the C level fd 1
    return {"outcome": "wrong_answer", "message": "the real verdict"}
h.evaluate = evaluate
sys.exit(h.serve())
'''


def test_candidate_output_goes_to_stderr_and_answers_to_the_private_channel():
    req = json.dumps({"problem": "p.py", "candidate": "c.py", "protocol": "cuda-agent"}) + "\n"
    r = subprocess.run([sys.executable, "-c", SPOOF], input=req, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=PY))
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    assert len(lines) == 1, r.stdout
    assert json.loads(lines[0])["outcome"] == "wrong_answer"
    assert '"t_candidate": 1e-9' in r.stderr and "fd 1" in r.stderr


class _FakeCuda:
    """torch.cuda's stream API as the harness's StreamWatch sees it: Stream objects compare by the
    stream they name, and current_stream() builds one through the module's `Stream` name on every
    call (as torch/cuda/__init__.py does), so it meets a watch's replacement of that name."""

    def __init__(self):
        cuda = self
        self.current = 0
        self.next_id = 1

        class Stream:
            def __new__(cls, stream_id=None):
                s = object.__new__(Stream)
                if stream_id is None:
                    stream_id, cuda.next_id = cuda.next_id, cuda.next_id + 1
                s.id = stream_id
                return s

            def __eq__(self, other):
                return isinstance(other, Stream) and other.id == self.id

            def __hash__(self):
                return self.id

        self.Stream = Stream

    def current_stream(self):
        return self.Stream(stream_id=self.current)

    def stream(self, s):
        return s

    def set_stream(self, s):
        self.current = s.id


class _FakeTorch:
    def __init__(self):
        self.cuda = _FakeCuda()


def _harness():
    sys.path.insert(0, PY)
    import kforge.harness as h
    return h


def test_the_stream_watch_counts_other_streams_not_the_timed_one():
    _harness()
    import kforge.candidate_worker as cw  # the watch runs around the candidate, in its process
    torch = _FakeTorch()
    watch = cw.StreamWatch(torch)
    with watch:
        for _ in range(3):
            torch.cuda.current_stream()  # what every generated ModelNew.forward does
        torch.cuda.stream(torch.cuda.current_stream())
    assert watch.count == 0
    with watch:
        side = torch.cuda.Stream()  # a new stream
        torch.cuda.stream(side)
    assert watch.count == 2
    # Outside the watch nothing counts, and the real names are back.
    torch.cuda.Stream()
    assert watch.count == 2 and torch.cuda.Stream.__name__ == "Stream"
    # Entering again swaps in the same replacements (made once, not per timed call).
    with watch:
        first = torch.cuda.Stream
    with watch:
        assert torch.cuda.Stream is first
    assert watch.count == 2


def test_an_exception_in_verification_is_a_runtime_fault_not_a_harness_error():
    h = _harness()
    try:
        import torch  # noqa: F401  (run_candidate names torch.cuda.OutOfMemoryError)
    except ImportError:
        import pytest
        pytest.skip("needs torch")

    def failing_verify(*args, **kwargs):
        raise RuntimeError("the candidate raised")

    saved = h.verify
    h.verify = failing_verify
    try:
        res = h.run_candidate({}, None, None, h.protocol_from("cuda-agent"), "cpu", True, False, 1, h.Timing())
    finally:
        h.verify = saved
    assert res["outcome"] == "runtime_fault"
    assert res["message"] == "RuntimeError: the candidate raised"


def test_a_problem_drawing_from_a_cpu_generator_is_built_with_torchs_defaults(monkeypatch):
    """Under the GPU default device, torch.randn(..., generator=torch.Generator()) raises ("Expected a 'cuda'
    device type for generator"): such a problem (tests/zoo/tv_resnet18.py calibrates its BatchNorm that way) is
    made without the default device; any other error is the problem's own."""
    import contextlib

    from kforge import harness
    inside = []

    @contextlib.contextmanager
    def fake_on_device(device):
        inside.append(device)
        try:
            yield
        finally:
            inside.pop()

    monkeypatch.setattr(harness, "on_device", fake_on_device)

    def make():
        if inside:
            raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
        return "made with torch's defaults"

    assert harness.made_on_device(make, "cuda:0") == "made with torch's defaults"

    def broken():
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        harness.made_on_device(broken, "cuda:0")
