# Tests for kforge synth's Python half: the execution filters (synth_checks.py), the AST fingerprints
# of the contamination check (synth_ast.py) and the worker's JSON-lines protocol (synth_worker.py).
import ast
import glob
import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from kforge.synth_ast import features_of_file, features_of_source  # noqa: E402
from kforge.synth_checks import load_like_kernelbench, run_checks  # noqa: E402

KB = os.environ.get("KFORGE_KERNELBENCH", os.path.join(ROOT, "..", "shared", "kernelbench"))
PROBLEMS = sorted(glob.glob(f"{KB}/level1/*.py")) + sorted(glob.glob(f"{KB}/level2/*.py"))


def task(forward, init="", inputs="torch.rand(batch_size, 64)", args="x"):
    """A KernelBench-format task with `batch_size = 2`."""
    body = textwrap.indent(textwrap.dedent(init).strip(), " " * 8) + "\n" if init else ""
    fwd = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n" + body +
            f"\n    def forward(self, {args}):\n" + fwd + "\n\n\nbatch_size = 2\n\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return []\n")


# ---------------------------------------------------------------- execution filters

def test_a_plain_task_passes_every_stage():
    stages, shapes = run_checks(task("x = torch.relu(x)\nreturn x * 2.0"), 1, "plain")
    assert [k for k, v in stages.items() if not v["ok"]] == []
    assert list(stages) == ["eager", "compile", "deterministic", "distinguishable"]
    assert shapes == [[2, 64]]


def test_a_task_that_does_not_run_fails_eager_with_the_reason():
    stages, _ = run_checks(task("return torch.matmul(x, x)"), 1, "bad")
    assert not stages["eager"]["ok"]
    assert "RuntimeError" in stages["eager"]["message"]
    assert "deterministic" not in stages


def test_stochastic_operators_are_caught():
    stages, _ = run_checks(task("return F.dropout(x, p=0.5, training=True)"), 1, "dropout")
    assert not stages["deterministic"]["ok"]
    assert "stochastic" in stages["deterministic"]["message"]


def test_stochastic_in_training_mode_only_is_caught():
    src = task("return self.drop(self.bn(x))", init="self.bn = nn.BatchNorm1d(64)\nself.drop = nn.Dropout(0.3)")
    stages, _ = run_checks(src, 1, "train_dropout")
    assert not stages["deterministic"]["ok"]
    assert "training mode" in stages["deterministic"]["message"]


def test_constant_outputs_are_rejected():
    stages, _ = run_checks(task("return x * 0.0"), 1, "zero")
    assert not stages["distinguishable"]["ok"]
    assert "constant" in stages["distinguishable"]["message"]


def test_outputs_that_hardly_change_are_rejected():
    # The mean of 65536 uniform values is 0.5 +- 0.001 for any input: a constant 0.5 would pass.
    stages, _ = run_checks(task("return x.mean(dim=1)", inputs="torch.rand(batch_size, 65536)"), 1, "mean")
    assert not stages["distinguishable"]["ok"]
    assert stages["distinguishable"]["max_diff"] < 0.01


def test_non_finite_outputs_are_rejected():
    stages, _ = run_checks(task("return torch.log(x - 2.0)"), 1, "nan")
    assert not stages["distinguishable"]["ok"]
    assert "nan" in stages["distinguishable"]["message"]


def test_the_loader_is_kernelbenchs():
    Model, get_inputs, get_init_inputs = load_like_kernelbench(task("return x"), "t")
    assert Model.__name__ == "Model" and get_inputs()[0].shape == (2, 64) and get_init_inputs() == []
    with pytest.raises(ValueError):
        load_like_kernelbench("import torch\n", "empty")


# ---------------------------------------------------------------- AST fingerprints

class _Rename(ast.NodeTransformer):
    """Renames every user identifier (variables, arguments, self attributes, module constants)."""

    KEEP = {"torch", "nn", "F", "self", "super", "Model", "get_inputs", "get_init_inputs", "math", "forward",
            "__init__", "float", "int", "len", "range", "tuple", "list", "max", "min", "sum", "abs"}

    def __init__(self):
        self.names = {}

    def new(self, name):
        if name in self.KEEP or name.startswith("__"):
            return name
        return self.names.setdefault(name, f"v{len(self.names)}_{name[::-1]}")

    def visit_Name(self, node):
        node.id = self.new(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.new(node.arg)
        node.annotation = None
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            node.attr = self.new(node.attr)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        node.keywords = list(reversed(node.keywords))
        return node


def near_copy(source, seed):
    """Renamed identifiers, shuffled and resized module constants, reversed keywords, no docstrings."""
    tree = ast.parse(source)
    _Rename().visit(tree)
    rng = random.Random(seed)
    consts = [i for i, s in enumerate(tree.body) if isinstance(s, ast.Assign)
              and isinstance(s.value, ast.Constant) and isinstance(s.value.value, int)]
    for i in consts:
        tree.body[i].value.value = tree.body[i].value.value * 2 + 1
    moved = [tree.body[i] for i in consts]
    rng.shuffle(moved)
    for i, stmt in zip(consts, moved):
        tree.body[i] = stmt
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.unparse(tree)


@pytest.mark.skipif(not PROBLEMS, reason="shared KernelBench problems not present")
def test_near_copies_of_every_shared_problem_fingerprint_identically():
    for i, path in enumerate(PROBLEMS):
        with open(path) as f:
            original = f.read()
        copy = near_copy(original, i)
        assert copy != original
        assert features_of_source(copy) == features_of_file(path), os.path.basename(path)


@pytest.mark.skipif(not PROBLEMS, reason="shared KernelBench problems not present")
def test_different_problems_fingerprint_differently():
    feats = {p: tuple(features_of_file(p)) for p in PROBLEMS}
    relu = [p for p in PROBLEMS if p.endswith("/19_ReLU.py")][0]
    conv = [p for p in PROBLEMS if p.endswith("/1_Conv2D_ReLU_BiasAdd.py")][0]
    assert feats[relu] != feats[conv]
    assert len(set(feats.values())) > 100  # only problems that differ by sizes alone coincide


def test_return_of_a_just_assigned_name_is_folded():
    a = "class Model:\n    def forward(self, x):\n        return torch.relu(x)\n"
    b = "class Model:\n    def forward(self, inp):\n        out = torch.relu(inp)\n        return out\n"
    assert features_of_source(a) == features_of_source(b)


# ---------------------------------------------------------------- the worker process

def test_worker_protocol(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.Popen([sys.executable, "-m", "kforge.synth_worker", "--serve"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env)
    try:
        def ask(req):
            p.stdin.write(json.dumps(req) + "\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())

        assert "torch" in ask({"cmd": "hello"})
        src = task("x = torch.relu(x)\nreturn x")
        traced = ask({"cmd": "trace", "name": "t", "sources": [src, "import torch\n"]})
        assert [n["op"] for n in traced["graphs"][0]["nodes"]] == ["relu"]
        assert "Model" in traced["graphs"][1]["error"]
        checked = ask({"cmd": "check", "name": "t", "seed": 3, "small": src, "full": src.replace("= 2", "= 4096")})
        assert all(s["ok"] for s in checked["stages"].values())
        assert checked["graph"]["inputs"][0]["shape"] == [4096, 64]
        assert checked["features"] == features_of_source(src)
        bad = tmp_path / "broken.py"
        bad.write_text("def (:\n")
        feats = ask({"cmd": "features", "paths": [str(bad)]})
        assert feats["features"] == [None] and "SyntaxError" in feats["errors"][0]
        assert "error" in ask({"cmd": "nope"})
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    assert p.returncode == 0
