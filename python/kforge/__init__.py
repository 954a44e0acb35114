# kforge Python side: the PyTorch importer (kforge.importer) that writes the kforge.graph/1 JSON, the GPU
# harness, the torch.compile backend (kforge.torch_backend, docs/torch-compile.md), the HTML report
# (kforge.report) and the way to the C++ core (kforge.core; `python -m kforge` runs it). Importing kforge
# imports no torch: each module imports what it needs (see _cache_torch_bytecode for the one thing it does).
__all__ = ["importer"]

import os as _os
import sys as _sys


def _cache_torch_bytecode():
    """Where torch ships no bytecode of its own and bytecode is not written beside sources (kforge starts its
    Python children with PYTHONDONTWRITEBYTECODE; an install made with it has no __pycache__), every process
    compiles torch's ~1,900 modules again: 6 of the 8.7 s `import torch, torch._dynamo` took on the GPU
    machine. Then the compiled modules are cached under $KFORGE_PYCACHE (kforge's trusted launchers set it to
    its cache folder + /pycache; never the harness worker's, which runs candidate code), beside no source:
    2.8 s from the second process on. A torch that has its bytecode is read as it is; KFORGE_PYCACHE=off,
    an empty one, or a pycache prefix already chosen leave everything as it was."""
    import importlib.util
    where = _os.environ.get("KFORGE_PYCACHE", "")
    if not where or where == "off" or not _sys.dont_write_bytecode or _sys.pycache_prefix:
        return
    spec = importlib.util.find_spec("torch")  # finds the package; imports nothing
    if spec is None or not spec.origin or _os.path.exists(importlib.util.cache_from_source(spec.origin)):
        return
    try:
        _os.makedirs(where, exist_ok=True)
    except OSError:  # an unwritable cache folder: compile as before
        return
    _sys.pycache_prefix = where
    _sys.dont_write_bytecode = False


_cache_torch_bytecode()
