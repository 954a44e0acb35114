# kforge Python side: the PyTorch importer (kforge.importer) that writes the kforge.graph/1 JSON, the GPU
# harness, the torch.compile backend (kforge.torch_backend, docs/torch-compile.md), the HTML report
# (kforge.report) and the way to the C++ core (kforge.core; `python -m kforge` runs it). Importing kforge
# imports no torch: each module imports what it needs.
__all__ = ["importer"]
