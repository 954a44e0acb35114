"""Which nodes of a dynamo FX graph kforge takes, and the graph split into the parts it takes and the
parts left to eager PyTorch. A node is taken when kforge's importer captures it alone (the same
importer `kforge import` runs, on meta tensors: nothing is computed); connected taken nodes become one
partition (torch.fx's CapabilityBasedPartitioner), which kforge plans and builds as one program.
"""
import operator
import os
import tempfile

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from . import importer
from .fx_problem import NotWritable, problem_source, tensor_meta

_COMPUTE = ("call_function", "call_method", "call_module")


def node_name(node):
    """What the summary calls a node's callable: torch.conv2d, Tensor.softmax, operator.getitem."""
    t = node.target
    if node.op == "call_method":
        return f"Tensor.{t}"
    if isinstance(t, str):
        return t
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__name__", repr(t))
    if mod.startswith("torch"):
        mod = "torch" if mod in ("torch", "torch._C._VariableFunctions") else mod
    return f"{mod}.{name}" if mod else name


def node_label(node):
    return f"{node.name} ({node_name(node)})"


def import_source(text, tag, path=None):
    """Run kforge's importer on a problem text (written to `path`, else to a temporary file); returns
    (graph dict, None) or (None, reason)."""
    keep = path is not None
    if keep:
        with open(path, "w") as f:
            f.write(text)
    else:
        fd, path = tempfile.mkstemp(prefix=f"kforge-{tag}-", suffix=".py")
        with os.fdopen(fd, "w") as f:
            f.write(text)
    try:
        try:
            return importer.import_problem(path), None
        except (importer.UserError, importer.InternalError, importer.Unsupported) as e:
            return None, importer.first_line(e).replace(path, "<graph>")
        except Exception as e:  # the importer meeting a construct it has no words for is data, not a crash
            return None, f"{type(e).__name__}: {importer.first_line(e)}".replace(path, "<graph>")
    finally:
        if not keep:
            os.unlink(path)


class KforgeSupport(OperatorSupportBase):
    """A node is supported when the importer captures a graph of that node alone (in-place calls on a
    fresh copy of their input); answers are remembered per callable and argument shapes."""

    def __init__(self):
        super().__init__()
        self.reasons = {}  # node name -> why it was left to eager
        self._memo = {}

    def is_node_supported(self, submodules, node):
        if node.op not in _COMPUTE:
            return False
        if node.target is operator.getitem:
            src = node.args[0]
            ok = isinstance(src, torch.fx.Node) and src.op in _COMPUTE and self.is_node_supported(submodules, src)
            if not ok:
                self.reasons[node_label(node)] = "indexes a value kforge does not take"
            return ok
        try:
            key = self._key(node)
        except NotWritable as e:
            self.reasons[node_label(node)] = str(e)
            return False
        if key not in self._memo:
            self._memo[key] = self._check(node)
        reason = self._memo[key]
        if reason is not None:
            self.reasons[node_label(node)] = reason
        return reason is None

    def _key(self, node):
        metas = tuple(tensor_meta(a) for a in node.all_input_nodes)
        return (node.op, node.target if node.op != "call_method" else f"m:{node.target}", metas,
                repr(node.args), repr(sorted(node.kwargs.items())))

    def _check(self, node):
        try:
            gm, metas = single_node_module(node)
            text = problem_source(gm, metas)
        except NotWritable as e:
            return str(e)
        graph, reason = import_source(text, "node")
        return reason if graph is None else None


def single_node_module(node):
    """A GraphModule of `node` alone: a placeholder per input node, in-place calls on a clone."""
    g = torch.fx.Graph()
    env, metas = {}, []
    inplace = _is_inplace(node)
    for i, a in enumerate(node.all_input_nodes):
        metas.append(tensor_meta(a))
        p = g.placeholder(f"in{i}")
        env[a] = g.call_method("clone", (p,)) if inplace else p
    out = g.node_copy(node, lambda n: env[n])
    g.output(out)
    return torch.fx.GraphModule(torch.nn.Module(), g), metas


def _is_inplace(node):
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    return (name.endswith("_") and not name.startswith("_")) or node.kwargs.get("inplace") is True


def op_names(gm):
    """The callables of the graph's compute nodes (indexing of multi-output results not counted)."""
    return [node_name(n) for n in gm.graph.nodes if n.op in _COMPUTE and n.target is not operator.getitem]


def count_ops(gm):
    return len(op_names(gm))


def split(gm, support, prefix="fused_"):
    """The graph with each run of supported nodes moved into a submodule <prefix><i>; returns it and the
    names of those submodules (an empty list: nothing is taken, the graph stays as it was)."""
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    partitions = [p for p in partitions if any(n.target is not operator.getitem for n in p.nodes)]
    if not partitions:
        return gm, []
    fused = partitioner.fuse_partitions(partitions, prefix=prefix)
    names = [n.target for n in fused.graph.nodes if n.op == "call_module" and n.target.startswith(prefix)]
    return fused, names


class _Among(OperatorSupportBase):
    def __init__(self, nodes):
        super().__init__()
        self.nodes = nodes

    def is_node_supported(self, submodules, node):
        return node.name in self.nodes  # by name: fusing rebuilds the graph (legalize_graph), names stay


def halve(sub, metas, prefix):
    """`sub` (a part kforge failed on as a whole) with its compute nodes in two runs, the first half in graph
    order and the rest, each moved into submodules <prefix>a<i> and <prefix>b<i>; returns it and their
    names. Shapes are propagated on meta tensors, so the halves can be written as problems."""
    compute = [n for n in sub.graph.nodes if n.op in _COMPUTE]
    head = set(compute[: len(compute) // 2])
    head |= {n for n in compute if n.target is operator.getitem and n.args[0] in head}
    names = []
    for tag, keep in (("a", head), ("b", set(compute) - head)):
        sub, got = split(sub, _Among({n.name for n in keep}), prefix=f"{prefix}{tag}")
        names += got
    _MetaProp(sub).run(*[torch.empty(s, dtype=d, device="meta") for s, d in metas])
    return sub, names


class _MetaProp(torch.fx.Interpreter):
    """Runs a graph on meta tensors and keeps each node's value as meta["kforge_meta"] (not ShapeProp:
    inside a backend it would pick up dynamo's fake mode and make symbols dynamo then has to guard)."""

    def run_node(self, n):
        out = super().run_node(n)
        n.meta["kforge_meta"] = out
        return out
