"""kforge agent on the GPU (label gpu; skipped without one): the scripted model of tests/llm writes a real
ReLU kernel, and verify/profile go through `kforge evaluate` (the two-process harness), no scripted
harness; the runtime threat fixtures end with -1 on the real harness; a scripted model that calls kforge's
skill tools (kforge_export) reaches kforge's own program and its reward."""
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _llm_helpers():
    """tests/llm/conftest.py by its path: `import conftest` finds whichever conftest pytest loaded first
    (tests/service has one too when both folders run in one session)."""
    spec = importlib.util.spec_from_file_location("kforge_llm_test_helpers", HERE.parent / "llm" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_h = _llm_helpers()
RELU, REPO, Server, call, load_events, model_new, run_agent, turn = (
    _h.RELU, _h.REPO, _h.Server, _h.call, _h.load_events, _h.model_new, _h.run_agent, _h.turn)


def has_gpu():
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not has_gpu(), reason="needs an NVIDIA GPU")


def end_of(out):
    return [e for e in load_events(out) if e["type"] == "episode_end"][-1]


def test_real_relu_kernel_verified_and_profiled(tmp_path):
    steps = [turn(call("write", path="model_new.py", content=model_new("REAL"))), turn(call("compile")),
             turn(call("verify")), turn(call("profile")), {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, "--device", "cuda", timeout=1800)
    ev = [e for e in load_events(out) if e["type"] == "evaluation"]
    assert [e["result"]["outcome"] for e in ev] == ["ok", "ok"], ev
    assert not any(e["result"].get("scripted_harness") for e in ev)
    assert end_of(out)["reward"] >= 1


def test_kforge_program_through_skill_tools(tmp_path):
    import os
    kb = Path(os.environ.get("KFORGE_KERNELBENCH", "/work/shared/kernelbench")) / "level2"
    problem = kb / "11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm.py"
    if not problem.exists():
        pytest.skip("no shared kernelbench level2 here")
    steps = [turn(call("kforge_import"), call("kforge_plan"), call("kforge_skill_sites")),
             turn(call("kforge_export")), turn(call("profile")), {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, "--device", "cuda", problem=problem, timeout=1800)
    assert end_of(out)["reward"] >= 1


@pytest.mark.parametrize("fixture", sorted(p.name for p in (REPO / "tests/threats").glob("*.py")
                                           if "layer: runtime" in p.read_text() and "expect: ok" not in p.read_text()))
def test_runtime_threats_score_minus_one(tmp_path, fixture):
    text = (REPO / "tests/threats" / fixture).read_text()
    steps = [turn(call("write", path="model_new.py", content=text)), turn(call("verify")), turn(call("profile")),
             {"content": "done"}]
    out = tmp_path / "run"
    with Server(tmp_path, {"steps": steps}) as s:
        run_agent(s.url, out, "--device", "cuda", timeout=1800)
    assert end_of(out)["reward"] == -1
