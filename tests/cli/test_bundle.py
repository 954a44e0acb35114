"""`kforge bench --bundle` and `kforge optimize --bundle` on the CPU (cost model): the archive holds
every problem's problem file, sources, schedule, build log, record and upstream export, with a
manifest, a README and the upstream script; an existing file is never overwritten without --force."""
import json
import os
import shutil
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(ROOT, "build", "kforge"))
UPSTREAM = os.path.normpath(os.path.join(ROOT, "..", "shared", "kernelbench", "upstream"))
# Shipped with the repository: no sibling folder needed.
PROBLEMS = [os.path.join(ROOT, "examples", "linear_gelu_residual.py"),
            os.path.join(ROOT, "tests", "problems", "relu_tanh.py")]


def kforge(*args, timeout=900):
    env = dict(os.environ, KFORGE_SANDBOX="none")
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, timeout=timeout, env=env)


def suite(tmp_path):
    level = tmp_path / "suite" / "level1"
    level.mkdir(parents=True)
    for p in PROBLEMS:
        shutil.copy(p, level / os.path.basename(p))
    return tmp_path / "suite"


def members(path):
    with tarfile.open(path, "r:gz") as t:
        return t.getnames(), {m: t.extractfile(m).read() for m in t.getnames()
                              if m.endswith((".json", ".md")) and t.getmember(m).isfile()}


def test_bench_bundle_holds_every_problem_and_refuses_to_overwrite(tmp_path):
    bundle = tmp_path / "audit.tar.gz"
    r = kforge("bench", "--suite", str(suite(tmp_path)), "--device", "cpu", "--out", str(tmp_path / "out"),
               "--bundle", str(bundle))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "audit bundle" in r.stdout
    names, texts = members(bundle)
    top = "kforge-bundle/"
    for m in ("README.md", "manifest.json", "records.json", "run_upstream_eval.py"):
        assert top + m in names, names
    manifest = json.loads(texts[top + "manifest.json"])
    assert manifest["format"] == "kforge.bundle/1" and manifest["command"] == "bench"
    assert manifest["commit"] and manifest["protocol"]["name"] == "cuda-agent"
    assert manifest["timing"]["method"] == "events" and manifest["predicted"] is True
    assert manifest["device"].startswith("cpu")
    assert [p["problem"] for p in manifest["problems"]] == ["linear_gelu_residual", "relu_tanh"]
    for p in manifest["problems"]:
        d = top + p["dir"] + "/"
        for m in ("problem.py", "record.json", "model_new.py", "schedule.json", "graph.json", "program.json",
                  "build.log", "kernelbench_model_new.py"):
            assert d + m in names, (d + m, names)
        assert any(n.startswith(d + "kernels/") and n.endswith(".cu") for n in names), names
        assert not any(n.startswith(d) and n.endswith(".so") for n in names)
        assert p["export"] == "kernelbench_model_new.py" and "upstream_static_check" in p
        assert set(p["files"]) >= {"problem.py", "record.json", "build.log"}
    readme = texts[top + "README.md"].decode()
    assert manifest["commit"] in readme and "cuda-agent" in readme and "run_upstream_eval.py" in readme

    before = bundle.read_bytes()
    again = kforge("bench", "--suite", str(suite(tmp_path / "again")), "--device", "cpu", "--out",
                   str(tmp_path / "out2"), "--bundle", str(bundle))
    assert again.returncode == 2, again.stdout + again.stderr
    assert "exists" in again.stderr and "--force" in again.stderr
    assert bundle.read_bytes() == before
    assert not (tmp_path / "out2" / "bench.json").exists()  # refused before any work

    forced = kforge("bench", "--suite", str(suite(tmp_path / "forced")), "--device", "cpu", "--out",
                    str(tmp_path / "out3"), "--bundle", str(bundle), "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert not os.path.exists(str(bundle) + ".partial")


def test_bundle_name_must_be_a_tar_gz_in_an_existing_folder(tmp_path):
    r = kforge("bench", "--suite", str(suite(tmp_path)), "--device", "cpu", "--out", str(tmp_path / "out"),
               "--bundle", str(tmp_path / "audit.zip"))
    assert r.returncode == 2 and ".tar.gz" in r.stderr
    r = kforge("bench", "--suite", str(suite(tmp_path / "b")), "--device", "cpu", "--out", str(tmp_path / "out"),
               "--bundle", str(tmp_path / "missing" / "audit.tar.gz"))
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_optimize_bundle_and_the_bundled_script_runs_the_upstream_checker(tmp_path):
    bundle = tmp_path / "one.tar.gz"
    r = kforge("optimize", PROBLEMS[1], "--device", "cpu", "--out", str(tmp_path / "out"), "--policy", "heuristic",
               "--turns", "2", "--bundle", str(bundle))
    assert r.returncode == 0, r.stdout + r.stderr
    names, texts = members(bundle)
    manifest = json.loads(texts["kforge-bundle/manifest.json"])
    assert manifest["command"] == "optimize" and len(manifest["problems"]) == 1
    p = manifest["problems"][0]
    assert "kforge-bundle/" + p["dir"] + "/kernelbench_model_new.py" in names
    assert "kforge-bundle/" + p["dir"] + "/report.json" in names
    r = kforge("optimize", PROBLEMS[1], "--device", "cpu", "--out", str(tmp_path / "out"), "--force",
               "--policy", "heuristic", "--turns", "2", "--bundle", str(bundle))
    assert r.returncode == 0  # --force: overwrites
    if not os.path.isdir(os.path.join(UPSTREAM, "kernelbench")):
        return  # the script needs upstream's package (../shared/kernelbench/upstream); the rest stands alone
    with tarfile.open(bundle, "r:gz") as t:
        t.extractall(tmp_path / "x")
    root = tmp_path / "x" / "kforge-bundle"
    out = tmp_path / "upstream.json"
    r = subprocess.run([sys.executable, str(root / "run_upstream_eval.py"), "--upstream", UPSTREAM, "--bundle",
                        str(root), "--static-only", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads(out.read_text())["records"][0]
    assert rec["verdict"] in ("not_run", "rejected_static") and rec["agrees"] is None  # predicted: nothing to compare
    assert "static_ok" in rec
