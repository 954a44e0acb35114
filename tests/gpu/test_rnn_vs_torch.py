"""GPU test of recurrent layers kept whole (the `rnn` op, strategy cudnn_rnn, kf_cudnn_rnn in
src/codegen/runtime/kforge_cudnn.cu; ctest label gpu, skipped without a GPU). Three problems are built through
`kforge build` (in parallel, each with its own cache) and compared with PyTorch on fresh random inputs at the
cuda-agent tolerance (atol = rtol = 1e-2): one with every mode kept whole (a 2-layer bidirectional LSTM with h0/c0
and returned states, a GRU and a 3-layer RNN batch-first, relu and tanh RNNs, a layer without biases) and an LSTM
with proj_size (decomposed as before), and tests/zoo/lstm_multilayer_states.py and gru_bidirectional.py. Each
ModelNew is called repeatedly (eager, captured into a CUDA graph, replayed), with fresh inputs and after an
in-place change of a weight (the weight space is repacked on every call). A short table of the largest errors
and of the zoo problems' times against eager is printed (pytest -s). About a minute on an H100.

Run: KFORGE_BIN=build/kforge .venv/bin/python -m pytest -q -s tests/gpu/test_rnn_vs_torch.py"""
import importlib.util
import os
import subprocess
import textwrap

import pytest

from gpu_util import load, median_ms

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(ROOT, "build", "kforge"))
ATOL = RTOL = 1e-2  # the cuda-agent protocol's

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

ALL_MODES = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(32, 48, num_layers=2, bidirectional=True)
            self.gru = nn.GRU(32, 40, num_layers=2, batch_first=True)
            self.rnn_relu = nn.RNN(32, 24, nonlinearity="relu", bidirectional=True)
            self.rnn_tanh = nn.RNN(32, 24, num_layers=3, batch_first=True, bias=False)
            self.proj = nn.LSTM(32, 16, proj_size=8)  # not kept whole: decomposed, as before

        def forward(self, x, h0, c0):
            out1, (h1, c1) = self.lstm(x, (h0, c0))
            out2, h2 = self.gru(x.transpose(0, 1))
            out3, h3 = self.rnn_relu(x)
            out4, h4 = self.rnn_tanh(x.transpose(0, 1))
            out5, _ = self.proj(x[:3])
            return out1, h1, c1, out2, h2, out3, h3, out4, h4, out5


    def get_inputs():
        return [torch.randn(20, 4, 32), torch.randn(4, 4, 48), torch.randn(4, 4, 48)]


    def get_init_inputs():
        return []
    """)
ALL_MODES_OUTPUTS = ["lstm out", "lstm h_n", "lstm c_n", "gru out", "gru h_n", "rnn_relu out", "rnn_relu h_n",
                     "rnn_tanh out", "rnn_tanh h_n", "proj (decomposed)"]



@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rnn")
    (tmp / "rnn_all_modes.py").write_text(ALL_MODES)
    problems = {"rnn_all_modes": tmp / "rnn_all_modes.py",
                "lstm_multilayer_states": os.path.join(ROOT, "tests/zoo/lstm_multilayer_states.py"),
                "gru_bidirectional": os.path.join(ROOT, "tests/zoo/gru_bidirectional.py")}
    procs = {}
    for name, path in problems.items():
        env = {**os.environ, "KFORGE_CACHE": str(tmp / ("cache_" + name))}
        procs[name] = subprocess.Popen([KFORGE, "build", str(path), "--protocol", "cuda-agent", "--out",
                                        str(tmp / name), "--force"], stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, env=env)
    out = {}
    for name, p in procs.items():
        log, _ = p.communicate(timeout=600)
        assert p.returncode == 0, f"kforge build {name} failed:\n{log}"
        out[name] = tmp / name / "model_new.py"
    return out


def flat(result):
    import torch
    if isinstance(result, torch.Tensor):
        return [result]
    return [t for r in result for t in flat(r)]


def max_errors(got, want):
    import torch
    errs = []
    for g, w in zip(flat(got), flat(want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape)
        assert torch.allclose(g, w, atol=ATOL, rtol=RTOL), f"max abs difference {(g - w).abs().max().item()}"
        errs.append((g - w).abs().max().item())
    return errs


def pair(path, name):
    import torch
    mod = load(str(path), name)
    torch.manual_seed(0)
    ref = mod.Model(*mod.get_init_inputs()).cuda().eval()
    new = mod.ModelNew(*mod.get_init_inputs()).cuda().eval()
    new.load_state_dict(ref.state_dict())
    return mod, ref, new


def fresh_inputs(mod, seed):
    import torch
    torch.manual_seed(seed)
    return [x.cuda() for x in mod.get_inputs()]



def check_calls(mod, ref, new, weight):
    """Same inputs again and again (eager, capture, replays), fresh ones, and a weight changed in place; returns
    the largest error per output."""
    import torch
    worst = None
    with torch.no_grad():
        xs = fresh_inputs(mod, 1)
        want = ref(*xs)
        for _ in range(4):
            errs = max_errors(new(*xs), want)
            worst = errs if worst is None else [max(a, b) for a, b in zip(worst, errs)]
        for seed in (2, 3):
            xs2 = fresh_inputs(mod, seed)
            worst = [max(a, b) for a, b in zip(worst, max_errors(new(*xs2), ref(*xs2)))]
        for m in (ref, new):  # same pointer, new values: kf_cudnn_rnn repacks the weights on every call
            getattr(m, weight[0]).get_parameter(weight[1]).mul_(-0.5)
        for _ in range(2):
            worst = [max(a, b) for a, b in zip(worst, max_errors(new(*xs), ref(*xs)))]
    return worst


def test_all_modes_match_torch(built):
    mod, ref, new = pair(built["rnn_all_modes"], "kf_rnn_all_modes")
    worst = check_calls(mod, ref, new, ("lstm", "weight_hh_l1_reverse"))
    print("\nrecurrent layers vs torch (cuda-agent tolerance 1e-2), largest abs error over 8 calls")
    for name, e in zip(ALL_MODES_OUTPUTS, worst):
        print(f"  {name:<20} {e:.2e}")
    mod.kforge_release()


@pytest.mark.parametrize("name,weight", [("lstm_multilayer_states", ("lstm", "weight_ih_l2")),
                                         ("gru_bidirectional", ("gru", "weight_hh_l0_reverse"))])
def test_zoo_problem_matches_torch_and_is_timed(built, name, weight):
    import torch
    mod, ref, new = pair(built[name], "kf_" + name)
    worst = check_calls(mod, ref, new, weight)
    with torch.no_grad():
        xs = fresh_inputs(mod, 4)
        for _ in range(3):  # warm: capture, replays
            new(*xs)
            ref(*xs)
        t_new, t_ref = median_ms(new, xs), median_ms(ref, xs)
    print(f"\n{name}: largest abs error {max(worst):.2e}; kforge {t_new:.3f} ms, eager {t_ref:.3f} ms, "
          f"speed-up {t_ref / t_new:.2f}x")
    mod.kforge_release()
