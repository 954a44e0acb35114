"""The CUDA-Agent workspace of one task:

    RUN/workspace/   the writable tree: SKILL.md, model.py (the problem), model_new.py, kernels/
    RUN/evaluator/   the protected entry points (compile.py, verify.py, profile.py) and MANIFEST.json, the
                     sha256 of every protected file (those, model.py, SKILL.md); read-only on disk, and
                     checked by hash before every evaluation (`check_protected`).

`kforge export --format cuda-agent` writes kforge's best program in the same layout (python -m
kforge.llm_agent workspace ...)."""
import hashlib
import json
import os
import shutil
import stat

PROTOCOL_TOLERANCE = {"cuda-agent": 1e-2, "kernelbench": 1e-4}
PROTECTED_IN_WORKSPACE = ("model.py", "SKILL.md")

STARTER_MODEL_NEW = '''"""ModelNew: write it (SKILL.md says how)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *inputs):
        raise NotImplementedError("write ModelNew with your own CUDA kernels")
'''

ENTRY_POINT = '''"""kforge evaluator entry point ({mode}): protected, checked by hash; do not edit."""
import os, sys
sys.path.insert(0, {python_dir!r})
if {kforge_bin!r}:
    os.environ.setdefault("KFORGE_BIN", {kforge_bin!r})
from kforge.llm_agent.evaluation import entry_point
sys.exit(entry_point({mode!r}, {run_dir!r}))
'''


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def skill_md_text(protocol, evaluator_dir):
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "SKILL.md.in")) as f:
        text = f.read()
    return (text.replace("{protocol}", protocol)
            .replace("{tolerance}", "%g" % PROTOCOL_TOLERANCE.get(protocol, 1e-2))
            .replace("{evaluator_dir}", evaluator_dir))


class Workspace:
    def __init__(self, run_dir):
        self.run_dir = os.path.abspath(run_dir)
        self.root = os.path.join(self.run_dir, "workspace")
        self.evaluator = os.path.join(self.run_dir, "evaluator")
        self.manifest_path = os.path.join(self.evaluator, "MANIFEST.json")

    @property
    def model_py(self):
        return os.path.join(self.root, "model.py")

    @property
    def model_new_py(self):
        return os.path.join(self.root, "model_new.py")

    @property
    def kernels_dir(self):
        return os.path.join(self.root, "kernels")

    def manifest(self):
        with open(self.manifest_path) as f:
            return json.load(f)

    def protocol(self):
        return self.manifest().get("protocol", "cuda-agent")

    def check_protected(self):
        """'' when every protected file is as written, else what changed (a sentence)."""
        try:
            m = self.manifest()
        except (OSError, ValueError) as e:
            return "the evaluator's manifest cannot be read (%s)" % e
        changed = []
        for rel, digest in sorted(m["sha256"].items()):
            p = os.path.join(self.run_dir, rel)
            try:
                ok = sha256_file(p) == digest
            except OSError:
                ok = False
            if not ok:
                changed.append(rel)
        if changed:
            return "protected files changed: " + ", ".join(changed)
        return ""


def _make_read_only(path):
    mode = os.stat(path).st_mode
    os.chmod(path, mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def create(run_dir, problem, protocol="cuda-agent", model_new_text=None, force=False):
    """Writes the layout; returns the Workspace. Refuses a non-empty run_dir/workspace unless force."""
    ws = Workspace(run_dir)
    if os.path.exists(ws.root) and os.listdir(ws.root) and not force:
        raise FileExistsError("%s exists and is not empty; pass --force to overwrite it" % ws.root)
    for d in (ws.root, ws.evaluator):
        if os.path.exists(d):
            for dirpath, dirnames, filenames in os.walk(d):
                os.chmod(dirpath, 0o755)
                for f in filenames:
                    os.chmod(os.path.join(dirpath, f), 0o644)
            shutil.rmtree(d)
    os.makedirs(ws.kernels_dir)
    os.makedirs(ws.evaluator)
    shutil.copyfile(problem, ws.model_py)
    with open(os.path.join(ws.root, "SKILL.md"), "w") as f:
        f.write(skill_md_text(protocol, os.path.relpath(ws.evaluator, ws.root)))
    with open(ws.model_new_py, "w") as f:
        f.write(model_new_text if model_new_text is not None else STARTER_MODEL_NEW)
    python_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for mode in ("compile", "verify", "profile"):
        with open(os.path.join(ws.evaluator, mode + ".py"), "w") as f:
            f.write(ENTRY_POINT.format(mode=mode, python_dir=python_dir, run_dir=ws.run_dir,
                                        kforge_bin=os.environ.get("KFORGE_BIN") or shutil.which("kforge") or ""))
    digests = {}
    for rel in ["evaluator/compile.py", "evaluator/verify.py", "evaluator/profile.py"] + [
            "workspace/" + p for p in PROTECTED_IN_WORKSPACE]:
        digests[rel] = sha256_file(os.path.join(ws.run_dir, rel))
    with open(ws.manifest_path, "w") as f:
        json.dump({"protocol": protocol, "problem": os.path.abspath(problem), "sha256": digests}, f, indent=1)
    for rel in digests:
        _make_read_only(os.path.join(ws.run_dir, rel))
    _make_read_only(ws.manifest_path)
    os.chmod(ws.evaluator, 0o555)
    return ws
