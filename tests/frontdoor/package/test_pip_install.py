"""`pip install .` for real (ctest frontdoor_package, run alone: it reconfigures the shared build/ tree, where
ninja then has nothing to do): the package installs, `kforge` and `python -m kforge` run the packaged core,
torch lists the backend through the entry point, and the packaged core finds its tree (kforge import works)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def clean_env(target):
    env = {k: v for k, v in os.environ.items() if k not in ("KFORGE_BIN", "KFORGE_HOME", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if os.environ.get("KFORGE_REQUIRE_PYTHON_DEPS") != "1":  # under ctest setup.sh installed it: fail if missing
        pytest.importorskip("scikit_build_core")
    target = tmp_path_factory.mktemp("site")
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                        "--target", str(target), ROOT], capture_output=True, text=True, timeout=3600, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return target


def test_the_command_and_python_m_run_the_packaged_core(installed):
    env = clean_env(installed)
    for argv in ([str(installed / "bin" / "kforge"), "--version"], [sys.executable, "-m", "kforge", "--version"]):
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd="/")
        assert p.returncode == 0 and p.stdout.strip() == "kforge 0.1.0", p.stderr
    code = "import kforge.core as c; print(c.executable())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd="/")
    assert p.stdout.strip() == str(installed / "kforge" / "_core" / "bin" / "kforge"), p.stderr


def test_torch_lists_the_backend_from_the_entry_point(installed):
    code = "import sys, torch; print('kforge' in torch._dynamo.list_backends(), 'kforge' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(installed),
                       timeout=300, cwd="/")
    assert p.returncode == 0 and p.stdout.split() == ["True", "False"], p.stderr


def test_the_packaged_core_finds_its_tree(installed, tmp_path):
    out = tmp_path / "g.json"
    p = subprocess.run([str(installed / "kforge" / "_core" / "bin" / "kforge"), "import",
                        os.path.join(ROOT, "examples", "linear_gelu_residual.py"), "-o", str(out)],
                       capture_output=True, text=True, env=clean_env(installed), timeout=600, cwd="/")
    assert p.returncode == 0, p.stderr
    assert '"format": "kforge.graph/1"' in out.read_text()
