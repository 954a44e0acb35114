"""The torch.compile backend's on-disk cache: one folder per program, keyed by the problem text (the graph
and its input shapes and dtypes), the device, the kforge and torch versions and the options that change
what is built, so that a second process with the same model builds nothing.

    <cache>/<key>/problem.py     the subgraph as a KernelBench problem (fx_problem.py)
    <cache>/<key>/graph.json     kforge's capture of it (kforge.graph/1)
    <cache>/<key>/plan/          `kforge optimize` output: schedule, report.json (predicted on CPU)
    <cache>/<key>/model_new.py   `kforge export --format kernelbench` (GPU only)
    <cache>/<key>/entry.json     what was decided: taken or left, why, and the numbers of the summary
    <cache>/torch_extensions/    load_inline's build folders (TORCH_EXTENSIONS_DIR), so .so files persist
"""
import hashlib
import json
import os

import torch

from . import core

FORMAT = "kforge.compile-cache/1"


def default_dir():
    env = os.environ.get("KFORGE_COMPILE_CACHE")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kforge", "torch-compile")


def device_key(device):
    """The device part of the key: the GPU's name and compute capability, or "cpu"."""
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        cap = torch.cuda.get_device_capability(idx)
        return f"cuda:{torch.cuda.get_device_name(idx)}:sm_{cap[0]}{cap[1]}"
    return device.type


def key(problem_text, device, options):
    h = hashlib.sha256()
    for part in (FORMAT, problem_text, device_key(device), core.version(), torch.__version__,
                 json.dumps(options, sort_keys=True)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


class Entry:
    """One folder of the cache; entry.json is written last, so a folder without it is not a hit."""

    def __init__(self, root, k):
        self.root = root
        self.key = k
        self.dir = os.path.join(root, k)

    def path(self, name):
        return os.path.join(self.dir, name)

    def load(self):
        try:
            with open(self.path("entry.json")) as f:
                data = json.load(f)
            return data if data.get("format") == FORMAT else None
        except (OSError, ValueError):
            return None

    def store(self, data):
        os.makedirs(self.dir, exist_ok=True)
        tmp = self.path(f"entry.json.{os.getpid()}")
        with open(tmp, "w") as f:
            json.dump(dict(data, format=FORMAT), f, indent=1)
        os.replace(tmp, self.path("entry.json"))

    def write(self, name, text):
        os.makedirs(self.dir, exist_ok=True)
        with open(self.path(name), "w") as f:
            f.write(text)
