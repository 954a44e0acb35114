"""GPU tests of the whole forward as one CUDA graph (kf_graph_forward in src/codegen/runtime/kforge_runtime.cu;
ctest label gpu, skipped without a GPU). A small conv + BatchNorm + MLP network is built; its ModelNew is
called again and again and compared with the problem's Model on every call:
  - the same inputs: the first call runs eagerly, the second is captured, later ones replay the graph;
  - inputs and weights changed in place between calls (the graph reads them anew on every replay);
  - a fresh input tensor on every call (new pointers: eager, never a stale graph);
  - a weight replaced by a new Parameter (new pointer: the graph of the old one is not used);
  - KFORGE_CUDA_GRAPHS=0 in a fresh process: no capture at all, the same answers."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

from gpu_util import load

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

PROBLEM = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, padding=1)
            self.bn = nn.BatchNorm2d(16)
            self.fc1 = nn.Linear(16 * 8 * 8, 64)
            self.fc2 = nn.Linear(64, 10)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            y = torch.nn.functional.max_pool2d(y, 2)
            y = torch.relu(self.fc1(y.flatten(1)))
            return torch.softmax(self.fc2(y), dim=-1)


    def get_inputs():
        return [torch.randn(32, 3, 16, 16)]


    def get_init_inputs():
        return []
    """)



@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("graph")
    path = tmp / "graph_net.py"
    path.write_text(PROBLEM)
    out = tmp / "out"
    # eval mode (cuda-agent), fp32 contractions, the conv on torch's own cuDNN engine (no implicit GEMM, no
    # engine search): ModelNew computes what Model computes, and is compared with it tightly below
    sched = tmp / "schedule.json"
    r = subprocess.run([KFORGE, "plan", str(path), "--protocol", "cuda-agent", "--precision", "fp32",
                        "--disable-skill", "conv_implicit_gemm", "--disable-skill", "conv_engine_search", "-o",
                        str(sched)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    r = subprocess.run([KFORGE, "build", str(path), "--protocol", "cuda-agent", "--schedule", str(sched), "--out", str(out),
                        "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    return out / "model_new.py"


def stats(mod):
    import ctypes
    lib = mod._kf_load()
    lib.kforge_cuda_graph_stats.restype = ctypes.c_char_p
    return json.loads(lib.kforge_cuda_graph_stats().decode())


def check(got, want):
    import torch
    assert got.shape == want.shape
    # fp32 throughout (cuDNN may pick another engine than torch): a stale graph would be off by O(0.1)
    assert torch.allclose(got, want, rtol=1e-3, atol=1e-4), f"max abs difference {(got - want).abs().max().item()}"


def test_replays_are_correct_on_every_call(built):
    import torch
    mod = load(str(built), "kf_graph_same")
    torch.manual_seed(0)
    ref = mod.Model().cuda().eval()
    new = mod.ModelNew().cuda().eval()
    new.load_state_dict(ref.state_dict())
    x = torch.randn(32, 3, 16, 16, device="cuda")
    with torch.no_grad():
        want = ref(x)
        for _ in range(6):  # each output freed before the next call: the allocator hands back the same block
            check(new(x), want)
        s = stats(mod)
        assert s["enabled"] and s["captures"] >= 1 and s["replays"] >= 3, s
        x.copy_(torch.randn_like(x))  # same pointer, new values: the graph must read them
        check(new(x), ref(x))
        for m in (ref, new):  # a weight changed in place: same pointer, new values
            m.fc1.weight.mul_(-0.5)
        check(new(x), ref(x))
        before = stats(mod)
        for _ in range(4):  # fresh inputs: new pointers every call
            x2 = torch.randn(32, 3, 16, 16, device="cuda")
            check(new(x2), ref(x2))
        assert stats(mod)["eager"] > before["eager"], stats(mod)
        w = torch.randn_like(ref.fc2.weight)  # a replaced parameter: a new pointer, never the old graph
        ref.fc2.weight = torch.nn.Parameter(w.clone())
        new.fc2.weight = torch.nn.Parameter(w.clone())
        for _ in range(3):
            check(new(x), ref(x))
    torch.cuda.synchronize()
    mod.kforge_release()


def test_graphs_off_by_environment(built):
    code = textwrap.dedent(f"""
        import ctypes, importlib.util, json, torch
        spec = importlib.util.spec_from_file_location("kf_graph_off", {str(built)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        ref = mod.Model().cuda().eval()
        new = mod.ModelNew().cuda().eval()
        new.load_state_dict(ref.state_dict())
        x = torch.randn(32, 3, 16, 16, device="cuda")
        with torch.no_grad():
            for _ in range(4):
                assert torch.allclose(new(x), ref(x), rtol=1e-3, atol=1e-4)
        lib = mod._kf_load()
        lib.kforge_cuda_graph_stats.restype = ctypes.c_char_p
        print(lib.kforge_cuda_graph_stats().decode())
        """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "KFORGE_CUDA_GRAPHS": "0"})
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout.strip().splitlines()[-1])
    assert not s["enabled"] and s["captures"] == 0 and s["eager"] == 4, s
