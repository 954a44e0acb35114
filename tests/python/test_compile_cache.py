"""torch.compile's caches in the harness (sandbox/isolation.h): each candidate process compiles into a
private copy of the run's baseline cache, never into the baseline cache itself, and a baselines
worker alone precompiles references."""
import os

from kforge import harness


def test_the_candidate_process_gets_a_private_copy_of_the_baseline_cache(tmp_path):
    base = tmp_path / "baselines"
    (base / "inductor" / "ab").mkdir(parents=True)
    (base / "inductor" / "ab" / "graph.py").write_text("trusted")
    private = harness.private_compile_cache(str(base), parent=str(tmp_path))
    try:
        env = harness.candidate_env({"KFORGE_HARNESS_ROLE": "baselines", "PATH": "/bin"}, private)
        assert env["TORCHINDUCTOR_CACHE_DIR"] == os.path.join(private, "inductor")
        assert env["TRITON_CACHE_DIR"] == os.path.join(private, "triton")
        assert "KFORGE_HARNESS_ROLE" not in env and env["PATH"] == "/bin"
        copied = os.path.join(private, "inductor", "ab", "graph.py")
        assert open(copied).read() == "trusted"
        # What the candidate's process writes stays in its copy.
        with open(copied, "w") as f:
            f.write("poisoned")
        assert (base / "inductor" / "ab" / "graph.py").read_text() == "trusted"
    finally:
        import shutil
        shutil.rmtree(private)


def test_without_a_baseline_cache_the_private_cache_starts_empty(tmp_path):
    private = harness.private_compile_cache(None, parent=str(tmp_path))
    assert os.listdir(private) == []
    private2 = harness.private_compile_cache(str(tmp_path / "missing"), parent=str(tmp_path))
    assert private2 != private and os.listdir(private2) == []


def test_the_candidate_process_compiles_in_its_own_folder(tmp_path, monkeypatch):
    base = tmp_path / "baselines"
    base.mkdir()
    monkeypatch.setenv("KFORGE_BASELINE_CACHE", str(base))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    child = harness.CandidateProcess()
    child.start()
    try:
        cache = child.compile_cache
        assert cache and os.path.isdir(cache) and not cache.startswith(str(base))
    finally:
        child.stop()
    assert not os.path.exists(cache)  # gone with the process


def test_only_a_baselines_worker_precompiles(monkeypatch):
    monkeypatch.delenv("KFORGE_HARNESS_ROLE", raising=False)
    ans = harness.precompile_reference("/nonexistent.py", None, "cpu")
    assert ans["outcome"] == "runtime_fault" and "baselines worker" in ans["message"]
