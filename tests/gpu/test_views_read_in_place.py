"""GPU test of views read in place (ir/strided_view.h; ctest label gpu, skipped without a GPU): a permute, slice,
select, unfold, expand or flip whose readers are generated elementwise chains or reductions is not gathered into a
tensor: fuse_elementwise and the prologue skills join it to its reader, which reads the view's source at the
view's strides (codegen/elementwise_index.cpp strided_offset, reduce_common.cpp make_layout over strides). A view
several such readers share is copied per reader by the graph loader. Each problem is built with `kforge build`
(cuda-agent), its plan checked (no gather kernel left where every view can be read in place; the transposing
and the copying reshape kept as kernels), and its ModelNew compared with the Model on fresh random inputs, twice,
and after an input changed in place. pytest -s prints times beside eager's (CUDA events, median of 20).
Run: KFORGE_BIN=build/kforge .venv/bin/python -m pytest -q -s tests/gpu/test_views_read_in_place.py"""
import json
import os

import pytest

from gpu_util import build_all, check_like_reference, load, median_ms, problem_text as shared_problem_text

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(ROOT, "build", "kforge"))
TOL = 1e-2

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

# name: (forward body over x (and y), input shapes, gather kernels allowed to remain)
PROBLEMS = {
    "unfold_window_stats": ("w = x.unfold(2, 8, 4)\nreturn (w.amax(-1) - w.mean(-1)) * torch.sigmoid(w.var(-1))",
                            [(8, 32, 4096)], 0),
    "strided_slice_sum": ("return x[:, ::2, 1:].sum(dim=1) * 0.5", [(16, 64, 257)], 0),
    "neighbour_difference": ("return (x[..., 1:] - x[..., :-1]).abs().mean(-1)", [(64, 128, 513)], 0),
    "select_plus_rows": ("return torch.relu(x.select(1, 3) + y)", [(32, 8, 1024), (32, 1024)], 0),
    "expand_gate": ("g = torch.sigmoid(y).unsqueeze(1).expand(-1, 64, -1)\nreturn x * g",
                    [(16, 64, 512), (16, 512)], 0),
    "mirror_difference": ("return (x - x.flip(-1)).pow(2).sum(-1)", [(64, 4096)], 0),
    "slice_unfold_shared": ("w = x[:, :, 2:].unfold(2, 16, 16)\nreturn w.amax(-1) * w.sum(-1)", [(16, 64, 2050)], 0),
    "slice_mse": ("return torch.nn.functional.mse_loss(x[:, 1:], y)", [(256, 1025), (256, 1024)], 0),
    "transpose_amax": ("return x.transpose(1, 2).amax(dim=-1) + 1.0", [(8, 96, 640)], 0),
    "permute_keep_last": ("return x.permute(1, 0, 2) * y", [(32, 48, 256), (48, 32, 256)], 0),
    # Kept as kernels: a transpose feeding an elementwise chain (the tiled permute reads it coalesced) and a
    # reshape that strides cannot express (torch copies it too).
    "transpose_add": ("return x.transpose(1, 2) + y", [(8, 256, 384), (8, 384, 256)], 1),
    "copying_reshape": ("return x[:, :, 2:6].reshape(x.shape[0], -1).sum(-1)", [(64, 32, 8)], 1),
    # A view before a scan is left to scan_reverse / scan_exclusive (here a lone flip: its own kernel).
    "flip_cumsum": ("return torch.cumsum(x.flip(-1), dim=-1)", [(128, 1000)], 1),
}


def problem_text(body, shapes):
    return shared_problem_text(body, shapes, ["x", "y"][: len(shapes)])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    sources = {name: problem_text(body, shapes) for name, (body, shapes, _) in PROBLEMS.items()}
    return build_all(KFORGE, tmp_path_factory.mktemp("views"), sources)


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_views_read_in_place(built, name):
    import torch
    problem, out = built[name]
    schedule = json.loads((out / "schedule.json").read_text())
    gathers = [k["name"] for k in schedule["kernels"] if k.get("strategy") == "gather"]
    assert len(gathers) == PROBLEMS[name][2], f"{name}: gather kernels {gathers}; applied {schedule.get('applied')}"
    ref_mod = load(str(problem), "kf_ref_" + name)
    new_mod = load(str(out / "model_new.py"), "kf_new_" + name)
    ref, new = ref_mod.Model().cuda(), new_mod.ModelNew().cuda()
    with torch.no_grad():
        xs = check_like_reference(name, ref_mod.get_inputs, ref, new, TOL)
        t_new, t_ref = median_ms(new, xs, warm=3), median_ms(ref, xs, warm=3)
    print(f"\n{name:<24} {t_new:.4f} ms, eager {t_ref:.4f} ms ({len(schedule['kernels'])} kernels)")
    new_mod.kforge_release()
