"""GPU tests (ctest label gpu): the harness and kforge's GPU commands on a real device. Every test
skips itself on a machine without an NVIDIA GPU (CI); bench/gpu_run.sh runs them on the GPU machine."""
import json
import os
import subprocess
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))
SHARED = os.environ.get("KFORGE_KERNELBENCH", os.path.join(HERE, "../../../shared/kernelbench"))
RELU = os.path.join(SHARED, "level1/19_ReLU.py")

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")


def kforge(*args, timeout=900):
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, timeout=timeout)


def candidate(tmp_path, body):
    """A ModelNew for 19_ReLU (forward(x) -> relu(x)) whose forward is `body`."""
    p = tmp_path / "model_new.py"
    p.write_text(open(RELU).read() + "\n\n" + textwrap.dedent("""
        class ModelNew(Model):
            def forward(self, x):
        """) + textwrap.indent(textwrap.dedent(body), " " * 8))
    return str(p)


def evaluate(path, *extra):
    # These candidates compute with torch on purpose: the static checks (which forbid that) are off,
    # so that what is tested is the runtime checks.
    r = kforge("evaluate", RELU, path, "--json", "--no-profile", "--no-static-check", *extra)
    assert r.stdout, r.stderr
    return r.returncode, json.loads(r.stdout)


def test_optimize_verifies_and_times_on_the_gpu(tmp_path):
    r = kforge("optimize", RELU, "--device", "cuda", "--out", str(tmp_path / "out"), "--json", "--trials", "10")
    assert r.returncode == 0, r.stderr + r.stdout
    rep = json.loads(r.stdout)
    res = rep["result"]
    assert res["outcome"] == "ok" and res["verified"] and not res["predicted"]
    assert res["t_candidate"] > 0 and res["t_eager"] > 0 and res["t_compile"] > 0
    assert res["reward"] in (1, 2, 3)
    assert "H200" in res["device"] or "NVIDIA" in res["device"]


def test_a_correct_handwritten_candidate_passes(tmp_path):
    rc, res = evaluate(candidate(tmp_path, "return x.clamp_min(0.0)"))
    assert rc == 0 and res["outcome"] == "ok", res


def test_wrong_values_are_a_wrong_answer(tmp_path):
    # 5 % + 0.05 off: outside cuda-agent's atol = rtol = 1e-2 (0.1 % + 1e-3 was inside it).
    rc, res = evaluate(candidate(tmp_path, "return torch.relu(x) * 1.05 + 0.05"))
    assert rc == 1 and res["outcome"] == "wrong_answer", res


def test_an_unwritten_output_is_caught_by_the_poison(tmp_path):
    rc, res = evaluate(candidate(tmp_path, "return torch.empty_like(x)"))
    assert res["outcome"] == "wrong_answer", res


def test_returning_the_input_is_caught(tmp_path):
    rc, res = evaluate(candidate(tmp_path, "x.clamp_(min=0.0)\nreturn x"))
    assert res["outcome"] == "wrong_answer", res


def test_a_device_fault_is_a_runtime_fault(tmp_path):
    body = "i = torch.full((1,), 1 << 40, device=x.device, dtype=torch.long)\nreturn x.view(-1)[i]"
    rc, res = evaluate(candidate(tmp_path, body))
    assert rc == 1 and res["outcome"] == "runtime_fault", res


def test_a_hang_is_a_timeout(tmp_path):
    rc, res = evaluate(candidate(tmp_path, "import time\ntime.sleep(600)\nreturn x"), "--timeout", "20")
    assert rc == 1 and res["outcome"] == "timeout", res


def test_bench_on_a_small_suite(tmp_path):
    suite = tmp_path / "suite" / "level1"
    suite.mkdir(parents=True)
    for name in ("19_ReLU.py", "23_Softmax.py", "1_Square_matrix_multiplication_.py"):
        (suite / name).write_text(open(os.path.join(SHARED, "level1", name)).read())
    js = tmp_path / "bench.json"
    r = kforge("bench", "--suite", str(tmp_path / "suite"), "--device", "cuda", "--json", str(js),
               "--out", str(tmp_path / "out"), "--trials", "5", "--workers", "2")
    doc = json.loads(js.read_text())
    assert doc["predicted"] is False and doc["protocol"] == "cuda-agent"
    for key in ("device", "torch", "commit", "date", "summary", "problems"):
        assert key in doc
    assert len(doc["problems"]) == 3
    for p in doc["problems"]:
        for key in ("level", "problem", "outcome", "correct", "t_candidate_ms", "t_eager_ms", "t_compile_ms",
                    "max_abs_err", "reward"):
            assert key in p
    assert doc["summary"]["level1"]["problems"] == 3
    assert r.returncode in (0, 1), r.stderr


def test_an_exported_kernelbench_file_builds_with_load_inline_and_passes(tmp_path):
    # The self-contained export (CUDA inline, load_inline at import) verified like any candidate,
    # static checks included.
    out = tmp_path / "relu_export.py"
    r = kforge("export", RELU, "-o", str(out))
    assert r.returncode == 0, r.stderr
    r = kforge("evaluate", RELU, str(out), "--json", "--no-profile", "--timeout", "400")
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["outcome"] == "ok", res


def test_a_torch_fallback_is_forbidden_before_it_runs(tmp_path):
    r = kforge("evaluate", RELU, candidate(tmp_path, "return torch.relu(x)"), "--json", "--no-profile")
    res = json.loads(r.stdout)
    assert r.returncode == 1 and res["outcome"] == "forbidden", res
    assert "torch.relu" in res["message"]


def test_every_threat_fixture_is_caught_on_the_gpu(tmp_path):
    js = tmp_path / "threats.json"
    r = kforge("selftest", "threats", "--gpu", "--json", str(js))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(js.read_text())
    assert doc["skipped"] == 0 and doc["caught"] == doc["run"]


@pytest.mark.parametrize("method", ["wall", "do_bench"])
def test_timing_methods_fresh_inputs_and_other_baselines(tmp_path, method):
    r = kforge("evaluate", RELU, candidate(tmp_path, "return x.clamp_min(0.0)"), "--json", "--no-static-check",
               "--trials", "5", "--timing", method, "--fresh-inputs", "--baselines", "eager,compile_reduce_overhead")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["outcome"] == "ok" and res["timing"] == method and res["fresh_inputs"] is True, res
    assert res["t_candidate"] > 0 and res["t_eager"] > 0 and res["t_compile_reduce_overhead"] > 0, res
    assert res["t_compile"] is None and set(res["compile_seconds"]) == {"compile_reduce_overhead"}, res


def test_an_output_the_tolerance_cannot_resolve_is_flagged(tmp_path):
    # y = x * 1e-4 (|y| < 1e-3): all zeros would pass atol = 1e-2 as well; verified, with a warning.
    problem = tmp_path / "tiny.py"
    problem.write_text(textwrap.dedent("""
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                return x * 1e-4
        def get_inputs():
            return [torch.rand(1024)]
        def get_init_inputs():
            return []
        """))
    cand = tmp_path / "model_new.py"
    cand.write_text(problem.read_text() + "\nclass ModelNew(Model):\n    pass\n")
    r = kforge("evaluate", str(problem), str(cand), "--json", "--no-profile", "--no-static-check")
    res = json.loads(r.stdout)
    assert res["outcome"] == "ok" and any("all zeros" in w for w in res.get("warnings", [])), res
