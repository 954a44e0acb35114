# End-to-end tests of `kforge synth`: byte-identical datasets for a seed (any --jobs, interrupted
# or not), the dataset's files and columns, KernelBench's loader on every task, contamination
# removal of planted near-copies, and the messages and exit codes of bad input.
import filecmp
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(__file__))

from test_synth_worker import near_copy  # noqa: E402

KFORGE = os.environ.get("KFORGE_BIN", os.path.join(ROOT, "build", "kforge"))
KB = os.environ.get("KFORGE_KERNELBENCH", os.path.join(ROOT, "..", "shared", "kernelbench"))
# The benchmark the contamination check compares against: the shared level1 where it exists, else
# the small set kforge ships (tests/problems/level1), so that a clone alone runs these tests.
AGAINST = os.path.join(KB, "level1") if os.path.isdir(os.path.join(KB, "level1")) else \
    os.path.join(ROOT, "tests", "problems", "level1")

pytestmark = pytest.mark.skipif(not os.path.exists(KFORGE), reason=f"kforge binary not built ({KFORGE})")


def synth(out, *args, count=12, seed=7, jobs=2):
    cmd = [KFORGE, "synth", "--count", str(count), "--seed", str(seed), "--out", str(out), "-j", str(jobs), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def tree(d):
    """Every file under d, relative, sorted."""
    return sorted(os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs)


def assert_same_tree(a, b):
    assert tree(a) == tree(b)
    _, mismatch, errors = filecmp.cmpfiles(a, b, tree(a), shallow=False)
    assert mismatch == [] and errors == []


def rows(d, name="index.jsonl"):
    with open(os.path.join(d, name)) as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """One small dataset (seed 7, 12 tasks, 2 workers, against AGAINST)."""
    out = tmp_path_factory.mktemp("synth") / "ds"
    r = synth(out, "--against", AGAINST, count=12, jobs=2)
    assert r.returncode == 0, r.stderr
    return out, r


def test_dataset_layout_and_columns(dataset):
    out, r = dataset
    assert tree(out) == sorted(["synth.json", "index.jsonl", "candidates.jsonl", "report.json", "report.txt"] +
                               [os.path.join("tasks", t) for t in os.listdir(out / "tasks")])
    index = rows(out)
    assert len(index) == 12 == len(os.listdir(out / "tasks"))
    for row in index:
        assert list(row)[:3] == ["ops", "data_source", "code"]  # CUDA-Agent-Ops-6K's columns first
        assert row["data_source"] == f"torch#{len(row['ops'])}"
        assert (out / row["file"]).read_text() == row["code"]
        assert row["seed"] == 7 and row["predicted"] is True
        assert 1.0 <= row["predicted_eager_ms"] <= 100.0
        assert row["similarity"] <= 0.9 and row["nearest_benchmark"].startswith("level1/")
        assert [k for k, v in row["filters"].items() if v["result"] == "fail"] == []
        assert list(row["filters"]) == ["compose", "spine_import", "eager", "compile", "deterministic",
                                        "distinguishable", "runtime_window", "contamination"]
    cands = rows(out, "candidates.jsonl")
    assert [c["candidate"] for c in cands] == list(range(len(cands)))
    assert sum(c["accepted"] for c in cands) == 12 and cands[-1]["accepted"]
    report = json.loads((out / "report.json").read_text())
    assert report["accepted"] == 12 and report["candidates"] == len(cands)
    assert [s["stage"] for s in report["filter_yield"]][0] == "compose"
    assert sum(x["tasks"] for x in report["ops_per_task"]) == 12
    assert report["runtime"]["predicted"] is True
    assert "filter yield per stage" in r.stdout and "PREDICTED" in r.stdout
    assert "kforge synth:" in r.stderr  # progress lines


def test_imported_registry_ops_are_the_ones_the_library_declares(dataset):
    out, _ = dataset
    report = json.loads((out / "report.json").read_text())
    declared = {c["class"]: set(c["registry_ops"]) for c in report["library"]["class_list"]}
    for c in rows(out, "candidates.jsonl"):
        if c["registry_ops"]:
            assert set(c["registry_ops"]) <= set().union(*(declared[o] for o in c["ops"])), c["title"]


def test_every_task_loads_with_kernelbenchs_loader_and_runs(dataset):
    import torch
    import torch.nn.functional as F
    from kforge.import_ops import sdpa_polyfill
    out, _ = dataset
    polyfill = not hasattr(F, "scaled_dot_product_attention")
    if polyfill:  # torch 1.x: the reference polyfill the worker uses too
        F.scaled_dot_product_attention = sdpa_polyfill
    try:
        for row in rows(out):
            context = {}
            exec(compile(row["code"], "<string>", "exec"), context)  # what KernelBench's loader does
            Model, get_init_inputs, get_inputs = context["Model"], context["get_init_inputs"], context["get_inputs"]
            context["batch_size"] = 2  # the full size is for an H200
            model = Model(*get_init_inputs()).eval()
            with torch.no_grad():
                y = model(*get_inputs())
            assert y.shape[0] == 2, row["file"]
    finally:
        if polyfill:
            del F.scaled_dot_product_attention


def test_every_constructor_argument_and_constant_is_used(dataset):
    import ast
    out, _ = dataset
    for row in rows(out):
        tree = ast.parse(row["code"])
        model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
        init = next(n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        params = [a.arg for a in init.args.args[1:]]
        used = {n.id for n in ast.walk(init) if isinstance(n, ast.Name)}
        assert set(params) <= used, (row["file"], set(params) - used)
        init_inputs = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_init_inputs")
        assert [e.id for e in init_inputs.body[-1].value.elts] == params, row["file"]
        constants = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets]
        loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        assert set(constants) <= loads, (row["file"], set(constants) - loads)


def test_tasks_import_with_kforge(dataset):
    out, _ = dataset
    task = sorted(os.listdir(out / "tasks"))[0]
    r = subprocess.run([KFORGE, "import", str(out / "tasks" / task), "-o", str(out.parent / "g.json")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_same_seed_same_bytes_with_any_jobs(dataset, tmp_path):
    out, _ = dataset
    r = synth(tmp_path / "j1", "--against", AGAINST, count=12, jobs=1)
    assert r.returncode == 0, r.stderr
    assert_same_tree(out, tmp_path / "j1")
    other = synth(tmp_path / "seed8", "--against", AGAINST, count=12, seed=8)
    assert other.returncode == 0, other.stderr
    assert rows(tmp_path / "seed8") != rows(out)


def test_resume_after_a_kill_loses_and_duplicates_nothing(tmp_path):
    whole = synth(tmp_path / "whole", count=30, seed=11, jobs=1)
    assert whole.returncode == 0, whole.stderr
    out = tmp_path / "killed"
    p = subprocess.Popen([KFORGE, "synth", "--count", "30", "--seed", "11", "--out", str(out), "-j", "2"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = out / "journal.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and p.poll() is None:
        if journal.exists() and journal.read_text().count("\n") >= 10:
            break
        time.sleep(0.05)
    assert p.poll() is None, "the run ended before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not (out / "index.jsonl").exists()
    again = synth(out, count=30, seed=11)
    assert again.returncode == 2 and "--resume" in again.stderr
    resumed = synth(out, "--resume", count=30, seed=11)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr
    assert_same_tree(tmp_path / "whole", out)
    # A finished dataset resumed with a larger count grows to the dataset of that count.
    more = synth(out, "--resume", count=34, seed=11, jobs=1)
    assert more.returncode == 0, more.stderr
    fresh = synth(tmp_path / "fresh34", count=34, seed=11)
    assert_same_tree(tmp_path / "fresh34", out)


def test_planted_near_copies_are_removed_and_the_rest_kept(tmp_path):
    clean = tmp_path / "clean"
    r = synth(clean, count=10, seed=5)
    assert r.returncode == 0, r.stderr
    index = rows(clean)
    planted = tmp_path / "planted"
    planted.mkdir()
    chosen = index[1:4]
    for i, row in enumerate(chosen):
        (planted / f"copy_{i}.py").write_text(near_copy(row["code"], i))
    r = synth(tmp_path / "checked", "--against", str(planted), count=10, seed=5)
    assert r.returncode == 0, r.stderr
    by_candidate = {c["candidate"]: c for c in rows(tmp_path / "checked", "candidates.jsonl")}
    for i, row in enumerate(chosen):
        c = by_candidate[row["candidate"]]
        assert c["rejected_at"] == "contamination", c
        assert c["nearest_benchmark"] == f"planted/copy_{i}.py" and c["similarity"] > 0.9
    others = [row for row in index if row not in chosen]
    for row in others:  # genuinely different tasks stay
        c = by_candidate[row["candidate"]]
        assert c["accepted"] and c["similarity"] <= 0.9, c
    kept = {row["candidate"] for row in rows(tmp_path / "checked")}
    assert {row["candidate"] for row in others} <= kept and len(kept) == 10


def test_bad_input_is_a_clear_error_with_exit_code_2(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    r = synth(a_file / "ds")
    assert r.returncode == 2 and "kforge synth: error:" in r.stderr and "--out" in r.stderr

    r = synth(tmp_path / "ds", "--against", str(tmp_path / "missing"))
    assert r.returncode == 2 and "no such directory" in r.stderr and "missing" in r.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    r = synth(tmp_path / "ds", "--against", str(empty))
    assert r.returncode == 2 and "holds no problems" in r.stderr

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    r = synth(foreign)
    assert r.returncode == 2 and "did not write" in r.stderr
    assert (foreign / "notes.txt").read_text() == "mine" and os.listdir(foreign) == ["notes.txt"]

    done = tmp_path / "done"
    assert synth(done, count=1, seed=3).returncode == 0
    r = synth(done, "--resume", count=1, seed=4)
    assert r.returncode == 2 and "--seed 3" in r.stderr
