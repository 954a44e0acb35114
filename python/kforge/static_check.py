"""Static checks of a candidate ModelNew file before it runs: what it may not do, found in its
Python source (the AST, never by running it). Each finding names its rule, line and what it saw.

The rules are kforge's (DESIGN.md, "Rules for generated code") and the threat table of
research/reliability.md: no torch compute in ModelNew.forward (allocation and the built kernels
only), no extra streams, threads or processes, no try/except fallbacks, no patching of timers or
of torch, no state kept across calls (cached outputs), no file, network or environment access
(reading the reference, detecting the harness).

    python3 -m kforge.static_check CANDIDATE.py [--reference PROBLEM.py]

prints a JSON list of findings ([] when clean). The harness worker runs the same checks before it
loads a candidate, and answers `forbidden` when there is any.
"""
import argparse
import ast
import json
import sys

# Modules a candidate may not import: concurrency, processes, network, introspection of the harness.
FORBIDDEN_MODULES = {
    "threading": "host threads",
    "_thread": "host threads",
    "multiprocessing": "other processes",
    "concurrent": "thread or process pools",
    "subprocess": "other processes",
    "socket": "network access",
    "urllib": "network access",
    "http": "network access",
    "requests": "network access",
    "inspect": "introspection of the caller (the harness)",
    "gc": "introspection of live objects (the harness's tensors)",
    "signal": "signal handlers",
    "time": "timers (a candidate never needs them)",
    "timeit": "timers",
    "pickle": "loading stored objects (cached outputs)",
}

# Attribute chains that may not be called anywhere in a candidate.
FORBIDDEN_CALLS = {
    "torch.cuda.Stream": "creates a CUDA stream: work off the caller's stream escapes the timer",
    "torch.cuda.stream": "switches CUDA streams",
    "torch.cuda.set_stream": "switches CUDA streams",
    "torch.cuda.ExternalStream": "uses another CUDA stream",
    "torch.cuda.graphs.CUDAGraph": "replays captured work",
    "torch.cuda.CUDAGraph": "replays captured work",
    "torch.load": "loads stored tensors (cached outputs)",
    "torch.save": "stores tensors",
    "open": "opens a file (the reference, the harness's files)",
    "exec": "runs code made at run time",
    "eval": "runs code made at run time",
    "compile": "compiles code at run time",
    "__import__": "imports at run time",
    "setattr": "patches attributes at run time",
    "os.system": "runs a shell",
    "os.popen": "runs a shell",
    "os.fork": "forks the process",
    "os.getenv": "reads the environment (detecting the harness)",
    "os.kill": "signals processes",
    "torch.compile": "hands the work to torch.compile",
    "torch.utils.cpp_extension.load": None,  # allowed: building kernels is the point
}

# Names whose mere use is a finding (reads of the environment, argv, the harness's modules).
FORBIDDEN_NAMES = {
    "os.environ": "reads the environment (detecting the harness)",
    "sys.argv": "reads the command line (detecting the harness)",
    "sys.modules": "reaches into loaded modules (the harness)",
    "sys._getframe": "inspects the caller's frames (the harness)",
    "builtins": "patches builtins",
}

# torch calls ModelNew.forward may make: allocation, devices, streams of the caller.
FORWARD_TORCH_ALLOWED = {
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.device",
    "torch.cuda.current_stream", "torch.cuda.current_device", "torch.cuda.current_blas_handle",
}
FORWARD_TORCH_ALLOWED_PREFIXES = ("torch.ops.",)  # custom ops (compiled kernels registered with torch)
FORWARD_TORCH_DENIED_PREFIXES = ("torch.ops.aten.", "torch.ops.prims.", "torch.ops.quantized.")  # torch's own

# Tensor methods that compute: calling one in forward is a torch fallback.
COMPUTE_METHODS = {
    "abs", "add", "add_", "addmm", "all", "amax", "amin", "any", "argmax", "argmin", "baddbmm", "bmm",
    "ceil", "clamp", "clamp_", "clamp_min", "clamp_max", "clip", "clone", "copy_", "cos", "cumsum",
    "cumprod", "div", "div_", "einsum", "eq", "exp", "expm1", "fill_", "floor", "gather", "ge", "gelu",
    "gt", "index_select", "le", "log", "log1p", "log_softmax", "logsumexp", "lt", "masked_fill", "matmul",
    "max", "maximum", "mean", "min", "minimum", "mm", "mul", "mul_", "mv", "ne", "neg", "norm", "pow",
    "prod", "reciprocal", "relu", "relu_", "round", "rsqrt", "scatter", "sigmoid", "sign", "sin",
    "softmax", "softplus", "sort", "sqrt", "square", "std", "sub", "sub_", "sum", "tanh", "topk", "tril",
    "triu", "var", "where", "zero_", "normal_", "uniform_", "half", "bfloat16", "to", "float", "double",
    "contiguous", "conv1d", "conv2d", "conv3d", "linear", "dropout", "layer_norm", "batch_norm",
    "group_norm", "instance_norm", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "cross_entropy", "mse_loss", "scaled_dot_product_attention", "addcmul", "lerp",
}
# Modules whose calls inside forward are torch compute.
COMPUTE_MODULES = ("torch.nn.functional.", "F.", "torch.linalg.", "torch.fft.", "torch.special.")


def dotted(node):
    """'torch.cuda.Stream' for an Attribute/Name chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def finding(rule, node, message):
    return {"rule": rule, "line": getattr(node, "lineno", 0), "message": message}


def reference_names(reference_source):
    """Top-level definitions of the problem file (Model, get_inputs, ...), whose text a candidate
    may repeat unchanged: they are the reference's, not the candidate's."""
    if not reference_source:
        return {}
    tree = ast.parse(reference_source)
    return {n.name: ast.dump(n) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


class Checker(ast.NodeVisitor):
    def __init__(self, aliases):
        self.findings = []
        self.aliases = aliases  # local name -> module ("F" -> "torch.nn.functional")
        self.in_forward = False

    def resolve(self, name):
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head in self.aliases:
            return self.aliases[head] + ("." + rest if rest else "")
        return name

    def visit_Import(self, node):
        for a in node.names:
            root = a.name.split(".")[0]
            if root in FORBIDDEN_MODULES:
                self.findings.append(finding("forbidden_import", node,
                                             "imports %s: %s" % (a.name, FORBIDDEN_MODULES[root])))
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        root = (node.module or "").split(".")[0]
        if root in FORBIDDEN_MODULES:
            self.findings.append(finding("forbidden_import", node,
                                         "imports from %s: %s" % (node.module, FORBIDDEN_MODULES[root])))
        if node.module in ("os",):
            for a in node.names:
                if a.name in ("environ", "getenv", "system", "popen", "fork", "kill"):
                    self.findings.append(finding("forbidden_import", node, "imports os.%s" % a.name))
        self.generic_visit(node)

    def visit_Try(self, node):
        self.findings.append(finding("try_except", node,
                                     "try/except: a fallback when the kernels fail hides their failure"))
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_Global(self, node):
        if self.in_forward:
            self.findings.append(finding("state_across_calls", node,
                                         "forward declares global %s: state kept across calls" % ", ".join(node.names)))
        self.generic_visit(node)

    def visit_Assign(self, node):
        for t in node.targets:
            self.check_target(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self.check_target(node.target, node)
        self.generic_visit(node)

    def check_target(self, target, node):
        name = self.resolve(dotted(target))
        if name and (name.startswith("torch.") or name.startswith("time.") or name.startswith("os.")):
            self.findings.append(finding("patch", node, "assigns %s: patches torch, a timer or the OS" % name))
        if self.in_forward and isinstance(target, (ast.Attribute, ast.Subscript)):
            base = target.value
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if isinstance(base, ast.Name) and base.id == "self":
                self.findings.append(finding("state_across_calls", node,
                                             "forward stores into self (%s): outputs cached across calls"
                                             % (dotted(target) or "self[...]")))

    def visit_Attribute(self, node):
        name = self.resolve(dotted(node))
        if name in FORBIDDEN_NAMES:
            self.findings.append(finding("forbidden_name", node, "uses %s: %s" % (name, FORBIDDEN_NAMES[name])))
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in FORBIDDEN_NAMES:
            self.findings.append(finding("forbidden_name", node, "uses %s: %s" % (node.id, FORBIDDEN_NAMES[node.id])))

    def visit_Call(self, node):
        name = self.resolve(dotted(node.func))
        if name in FORBIDDEN_CALLS and FORBIDDEN_CALLS[name]:
            self.findings.append(finding("forbidden_call", node, "calls %s: %s" % (name, FORBIDDEN_CALLS[name])))
        if self.in_forward:
            self.check_forward_call(node, name)
        self.generic_visit(node)

    def check_forward_call(self, node, name):
        if name and name.startswith("torch."):
            allowed = name in FORWARD_TORCH_ALLOWED or (name.startswith(FORWARD_TORCH_ALLOWED_PREFIXES)
                                                        and not name.startswith(FORWARD_TORCH_DENIED_PREFIXES))
            if not allowed:
                self.findings.append(finding("torch_compute", node,
                                             "forward calls %s: torch compute in place of the kernels" % name))
            return
        if name and name.startswith(COMPUTE_MODULES):
            self.findings.append(finding("torch_compute", node,
                                         "forward calls %s: torch compute in place of the kernels" % name))
            return
        if isinstance(node.func, ast.Attribute) and node.func.attr in COMPUTE_METHODS:
            self.findings.append(finding("torch_compute", node,
                                         "forward calls .%s(): torch compute in place of the kernels"
                                         % node.func.attr))

    def visit_ClassDef(self, node):
        if node.name != "ModelNew":
            self.generic_visit(node)
            return
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "forward":
                self.in_forward = True
                self.visit(item)
                self.in_forward = False
            else:
                self.visit(item)


def import_aliases(tree):
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = node.module + "." + a.name
    return aliases


def check_candidate(source, reference_source=None, name="candidate"):
    """The findings in a candidate's source ([] when clean)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return [{"rule": "syntax", "line": e.lineno or 0, "message": "%s does not parse: %s" % (name, e.msg)}]
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        return [{"rule": "no_model_new", "line": 0, "message": "%s defines no class ModelNew" % name}]
    ref = reference_names(reference_source)
    # The reference's own definitions, repeated unchanged, are not checked: they are the problem's.
    body = [n for n in tree.body
            if not (isinstance(n, (ast.FunctionDef, ast.ClassDef)) and ref.get(n.name) == ast.dump(n))]
    checker = Checker(import_aliases(tree))
    for n in body:
        checker.visit(n)
    seen, out = set(), []
    for f in checker.findings:
        key = (f["rule"], f["line"], f["message"])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return sorted(out, key=lambda f: (f["line"], f["rule"]))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m kforge.static_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("candidate")
    ap.add_argument("--reference", help="the problem file, whose own definitions the candidate may repeat")
    args = ap.parse_args(argv)
    try:
        source = open(args.candidate).read()
        reference = open(args.reference).read() if args.reference else None
    except OSError as e:
        print("kforge static_check: error: %s" % e, file=sys.stderr)
        return 2
    print(json.dumps(check_candidate(source, reference, args.candidate)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
