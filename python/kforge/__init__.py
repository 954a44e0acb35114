# kforge Python side: the PyTorch importer (kforge.importer) that writes the kforge.graph/1 JSON.
__all__ = ["importer"]
