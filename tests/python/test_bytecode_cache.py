"""kforge/__init__.py's bytecode cache (issue #22, build time): where torch ships no bytecode and bytecode is not
written beside sources (PYTHONDONTWRITEBYTECODE, as kforge starts its Python children), the compiled modules go
to $KFORGE_PYCACHE instead of being compiled again by every process. A stand-in `torch` package in a temporary
folder plays the install, with and without its own __pycache__."""
import compileall
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.abspath(os.path.join(HERE, "..", "..", "python"))

PROBE = ("import sys, kforge, torch; print(repr(sys.pycache_prefix)); print(sys.dont_write_bytecode)")


def run_probe(site, env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("KFORGE_PYCACHE", "PYTHONPYCACHEPREFIX")}
    env.update({"PYTHONPATH": f"{site}{os.pathsep}{PACKAGE}", "PYTHONDONTWRITEBYTECODE": "1", **env_extra})
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    prefix, dont_write = r.stdout.split("\n")[:2]
    return prefix, dont_write == "True"


def fake_torch(tmp_path, with_bytecode):
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("VALUE = 1\n")
    (site / "torch" / "helper.py").write_text("X = 2\n")
    if with_bytecode:
        assert compileall.compile_dir(str(site / "torch"), quiet=1)
    return site


def test_a_torch_without_bytecode_is_compiled_once_into_the_cache(tmp_path):
    site = fake_torch(tmp_path, with_bytecode=False)
    cache = tmp_path / "pycache"
    prefix, dont_write = run_probe(site, {"KFORGE_PYCACHE": str(cache)})
    assert prefix == repr(str(cache)) and not dont_write
    cached = [f for _, _, files in os.walk(cache) for f in files if f.startswith("__init__") and f.endswith(".pyc")]
    assert cached, f"no bytecode of the stand-in torch under {cache}"
    # Nothing was written beside the sources.
    assert not (site / "torch" / "__pycache__").exists()


def test_a_torch_with_its_bytecode_is_read_in_place(tmp_path):
    site = fake_torch(tmp_path, with_bytecode=True)
    cache = tmp_path / "pycache"
    prefix, dont_write = run_probe(site, {"KFORGE_PYCACHE": str(cache)})
    assert prefix == "None" and dont_write
    assert not cache.exists()


def test_off_or_unset_leaves_everything_as_it_was(tmp_path):
    site = fake_torch(tmp_path, with_bytecode=False)
    for extra in ({"KFORGE_PYCACHE": "off"}, {}):
        prefix, dont_write = run_probe(site, extra)
        assert prefix == "None" and dont_write, extra
    assert not (site / "torch" / "__pycache__").exists()
