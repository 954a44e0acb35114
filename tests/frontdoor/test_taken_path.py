"""The GPU path's logic on the CPU: the device is made to look like a GPU and the built program is stood in
for by the exported file's own Model (what load_inline would compile is not needed to check the split graph,
the output structure, the first-call verification and the fallback). The real thing: tests/gpu."""
import importlib.util

import pytest
import torch

import kforge.torch_backend as kb
from kforge import compile_cache
from models import WithFft


class Scaled(torch.nn.Module):
    """A wrong program: the right answer times `scale`."""

    def __init__(self, model, scale):
        super().__init__()
        self.model, self.scale = model, scale

    def forward(self, *args):
        out = self.model(*args)
        return tuple(o * self.scale for o in out) if isinstance(out, tuple) else out * self.scale


def fake_gpu(monkeypatch, tmp_path, scale):
    monkeypatch.setenv("KFORGE_COMPILE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(kb, "_graph_device", lambda inputs: torch.device("cuda", 0))
    monkeypatch.setattr(compile_cache, "device_key", lambda device: "cuda:fake")
    loaded = []

    def load(path, extensions_dir):
        spec = importlib.util.spec_from_file_location("kforge_test_model_new", path)
        mod = importlib.util.module_from_spec(spec)
        source = open(path).read()
        # The exported file: the problem's source first, then ModelNew with load_inline; run the problem part.
        exec(compile(source.split("# ---- kforge ModelNew ----")[0], path, "exec"), mod.__dict__)
        loaded.append(path)
        return Scaled(mod.Model(), scale)

    monkeypatch.setattr(kb, "load_model_new", load)
    return loaded


@pytest.fixture(autouse=True)
def fresh():
    torch._dynamo.reset()
    kb.reset()
    yield
    torch._dynamo.reset()


def test_taken_parts_are_verified_and_run(monkeypatch, tmp_path):
    loaded = fake_gpu(monkeypatch, tmp_path, 1.0)
    torch.manual_seed(0)
    m, x = WithFft().eval(), torch.randn(4, 16)
    with torch.no_grad():
        f = torch.compile(m, backend="kforge")
        got, want = f(x), m(x)
        again = f(x)
    assert loaded and torch.allclose(got, want) and torch.allclose(again, want)
    (g,) = kb.SESSION
    taken = [p for p in g.parts if p.taken]
    assert taken and all(p.verified for p in taken) and g.ops_taken() == sum(len(p.ops) for p in taken)
    assert "taken by kforge" in kb.summary() and "verified" in kb.summary()


def test_a_wrong_program_is_caught_on_the_first_call_and_left_to_eager(monkeypatch, tmp_path, capsys):
    fake_gpu(monkeypatch, tmp_path, 1.5)
    torch.manual_seed(0)
    m, x = WithFft().eval(), torch.randn(4, 16)
    with torch.no_grad():
        f = torch.compile(m, backend="kforge")
        got, want = f(x), m(x)
        again = f(x)
    assert torch.allclose(got, want) and torch.allclose(again, want)  # eager's answer, both times
    (g,) = kb.SESSION
    bad = [p for p in g.parts if p.verified is False]
    assert bad and all(not p.taken and "differs from eager" in p.reason for p in bad)
    assert "left to eager" in capsys.readouterr().err


def test_strict_raises_on_a_wrong_program(monkeypatch, tmp_path):
    fake_gpu(monkeypatch, tmp_path, 1.5)
    m, x = WithFft().eval(), torch.randn(4, 16)
    with torch.no_grad(), pytest.raises(Exception, match="differs from eager"):
        torch.compile(m, backend="kforge", options={"strict": True})(x)
