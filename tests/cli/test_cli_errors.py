"""Error tests: what a user sees when the input is bad (message text and exit code)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

KFORGE = os.environ.get("KFORGE_BIN", os.path.join(os.path.dirname(__file__), "../../build/kforge"))
# Problems shipped with kforge (tests/problems): no sibling ../shared folder needed.
PROBLEMS = os.path.join(os.path.dirname(__file__), "../problems")


def kforge(*args, cwd=None):
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_missing_file_is_named(tmp_path):
    r = kforge("import", str(tmp_path / "nope.py"))
    assert r.returncode == 2
    assert "no such" in r.stderr and "nope.py" in r.stderr


def test_unreadable_file(tmp_path):
    p = write(tmp_path, "locked.py", "import torch\n")
    os.chmod(p, 0)
    if os.access(p, os.R_OK):  # root reads anything: make it unreadable another way
        os.chmod(p, 0o644)
        p = str(tmp_path)  # a directory in place of a file
    r = kforge("import", p)
    assert r.returncode == 2
    assert "kforge import: error:" in r.stderr


def test_missing_model_class(tmp_path):
    p = write(tmp_path, "nomodel.py", """
        import torch
        def get_inputs():
            return [torch.rand(2, 2)]
        def get_init_inputs():
            return []
    """)
    r = kforge("import", p)
    assert r.returncode == 2
    assert "Model" in r.stderr and "nomodel.py" in r.stderr


def test_unsupported_op_names_construct_and_line(tmp_path):
    p = write(tmp_path, "besselly.py", """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, x):
                y = torch.relu(x)
                return torch.special.bessel_j0(y)
        def get_inputs():
            return [torch.rand(4, 8)]
        def get_init_inputs():
            return []
    """)
    r = kforge("import", p)
    assert r.returncode == 2
    assert "bessel_j0" in r.stderr
    assert "besselly.py:7" in r.stderr


def test_malformed_graph_json(tmp_path):
    p = write(tmp_path, "g.json", '{"format": "kforge.graph/1", "nodes": [')
    r = kforge("build", p, "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "not valid JSON" in r.stderr


def test_graph_with_unknown_op(tmp_path):
    g = {"format": "kforge.graph/1", "name": "g", "inputs": [{"id": "x", "shape": [2], "dtype": "float32"}],
         "params": [], "nodes": [{"id": "y", "op": "frobnicate", "inputs": ["x"], "shape": [2], "dtype": "float32"}],
         "outputs": ["y"]}
    p = tmp_path / "g.json"
    p.write_text(json.dumps(g))
    r = kforge("plan", str(p))
    assert r.returncode == 2
    assert "unknown op 'frobnicate'" in r.stderr


def test_not_a_problem_or_graph(tmp_path):
    p = write(tmp_path, "notes.txt", "hello")
    r = kforge("build", p)
    assert r.returncode == 2
    assert "neither a problem (.py) nor a graph (.json)" in r.stderr


def test_out_dir_with_foreign_files_is_not_overwritten(tmp_path):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.txt").write_text("mine")
    r = kforge("optimize", os.path.join(PROBLEMS, "level1/19_ReLU.py"), "--out", str(out), "--device", "cpu")
    assert r.returncode == 2
    assert "did not write" in r.stderr and "--force" in r.stderr
    assert (out / "thesis.txt").read_text() == "mine"
    assert not (out / "model_new.py").exists()


def test_bad_flag_values(tmp_path):
    r = kforge("optimize", "x.py", "--device", "tpu")
    assert r.returncode == 2
    assert "device" in r.stderr
    r = kforge("optimize", "x.py", "--protocol", "fast")
    assert r.returncode == 2


def test_help_everywhere():
    for cmd in ([], ["import"], ["plan"], ["build"], ["optimize"], ["ops"]):
        r = kforge(*cmd, "--help")
        assert r.returncode == 0, cmd
        assert "Usage" in r.stdout or "USAGE" in r.stdout.upper()


def test_skills_lists_the_catalogue_in_planner_order():
    names = kforge("skills", "--names")
    assert names.returncode == 0
    listed = names.stdout.split()
    assert listed[0] == "constant_output" and "conv_epilogue" in listed and "reduce_prologue" in listed
    assert "cudnn_fastest_engine" not in listed  # removed: measured slower than torch's engine
    as_json = json.loads(kforge("skills", "--json").stdout)
    assert [s["name"] for s in as_json] == listed and all(s["summary"] for s in as_json)
    # Every listed skill is a valid --disable-skill name; an unknown one is refused with the list.
    r = kforge("plan", os.path.join(PROBLEMS, "level1/19_ReLU.py"), "--disable-skill", listed[-1])
    assert r.returncode == 0, r.stderr
    r = kforge("plan", os.path.join(PROBLEMS, "level1/19_ReLU.py"), "--disable-skill", "cudnn_fastest_engine")
    assert r.returncode == 2 and "conv_epilogue" in r.stderr, r.stderr


def load_model_new(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("kforge_model_new_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_model_new_checks_a_specialized_scalar_argument(tmp_path):
    # get_inputs() passes s = 3.14; the kernels are specialized to it, and ModelNew says so when
    # called with another value (before it needs a GPU), and accepts the built value.
    problem = os.path.join(PROBLEMS, "level1/5_Matrix_scalar_multiplication.py")
    out = tmp_path / "out"
    r = kforge("build", problem, "--out", str(out))
    assert r.returncode == 0, r.stderr
    import torch
    mod = load_model_new(str(out / "model_new.py"))
    m = mod.ModelNew()
    a = torch.rand(4, 4)
    with pytest.raises(ValueError, match=r"built for s = 3.14, got 2.0"):
        m(a, 2.0)
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        m(a)
    with pytest.raises(ValueError, match="CUDA device"):
        m(a, 3.14)


def test_python_without_torch_is_named_even_through_the_import_server(tmp_path):
    # The import server cannot start without torch; kforge falls back to the one-shot importer, whose
    # message says what to install. Exit 3: a tool kforge needs is missing.
    import venv
    venv.create(tmp_path / "bare", with_pip=False)  # no system site-packages: no torch
    problem = write(tmp_path, "relu.py", "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.relu(x)\n\ndef get_inputs():\n"
                    "    return [torch.rand(4, 8)]\n\ndef get_init_inputs():\n    return []\n")
    env = dict(os.environ, KFORGE_PYTHON=str(tmp_path / "bare" / "bin" / "python"))
    r = subprocess.run([KFORGE, "import", str(problem)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 3, r.stderr
    assert "needs PyTorch" in r.stderr and "KFORGE_PYTHON" in r.stderr
