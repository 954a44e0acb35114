# AST fingerprints of a KernelBench-format problem, for the contamination check of `kforge synth`.
"""The paper extracts the `Model` class of every program and compares ASTs structurally. This module
does the Python half: it parses with Python's own `ast`, keeps the `Model` class, normalizes what a
copy could change without changing the problem, and returns the normalized subtrees as a multiset
of strings. The C++ side (src/synth/similarity.cpp) compares two multisets (Dice coefficient).

Normalization, so that near-copies score as copies:
- user identifiers (locals, arguments, `self.<attr>` names, helper function names) become `_v`/`_a`/`_f`;
  names that are torch's API (`torch`, `nn`, `F`, methods and keywords of calls) stay, since they
  say what the program computes;
- numbers become `num`, strings `str` (hyper-parameters and sizes are not the problem);
- docstrings, type annotations and the `super().__init__()` call are dropped;
- keyword arguments are sorted by name; statements count as a multiset (reordering changes nothing);
- a function ending `v = <expr>; return v` ends `return <expr>` (the same program, one name fewer).
"""
import ast
import builtins

# Names whose identity is part of the program's meaning: the torch namespaces and Python builtins.
_API_NAMES = {"torch", "nn", "F", "functional", "math", "np", "numpy", "self"} | set(dir(builtins))
MAX_DEPTH = 3  # subtrees of depth 1..MAX_DEPTH are the features


def model_class(tree):
    """The `class Model` of the module, else the first class, else the whole module."""
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    for c in classes:
        if c.name == "Model":
            return c
    return classes[0] if classes else tree


def _is_docstring(stmt):
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _is_super_init(stmt):
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    f = stmt.value.func
    return (isinstance(f, ast.Attribute) and f.attr == "__init__" and isinstance(f.value, ast.Call)
            and isinstance(f.value.func, ast.Name) and f.value.func.id == "super")


def _fold_return(body):
    """`v = e` followed by `return v` becomes `return e`."""
    if len(body) >= 2 and isinstance(body[-1], ast.Return) and isinstance(body[-1].value, ast.Name):
        prev = body[-2]
        if (isinstance(prev, ast.Assign) and len(prev.targets) == 1 and isinstance(prev.targets[0], ast.Name)
                and prev.targets[0].id == body[-1].value.id):
            return body[:-2] + [ast.Return(value=prev.value)]
    return body


def _label(node):
    """One node's label: its type and the part of its payload that survives normalization."""
    kind = type(node).__name__
    if isinstance(node, ast.Name):
        return f"Name:{node.id if node.id in _API_NAMES else '_v'}"
    if isinstance(node, ast.Attribute):
        on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
        return f"Attr:{'_a' if on_self else node.attr}"
    if isinstance(node, ast.Constant):
        v = node.value
        if v is None or isinstance(v, bool):
            return f"Const:{v}"
        return "Const:str" if isinstance(v, str) else "Const:num"
    if isinstance(node, ast.keyword):
        return f"kw:{node.arg}"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"def:{node.name if node.name in ('forward', '__init__') else '_f'}"
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, ast.arg):
        return "arg:self" if node.arg == "self" else "arg"
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp)):
        return f"{kind}:{type(node.op).__name__}"
    if isinstance(node, ast.AugAssign):
        return f"AugAssign:{type(node.op).__name__}"
    if isinstance(node, ast.Compare):
        return "Compare:" + ",".join(type(o).__name__ for o in node.ops)
    return kind


def _children(node):
    """Children that carry meaning, in a canonical order (no annotations, docstrings, super call;
    keywords sorted; class bases and decorators dropped)."""
    if isinstance(node, ast.ClassDef):
        return [s for s in node.body if not _is_docstring(s)]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        body = [s for s in node.body if not _is_docstring(s) and not _is_super_init(s)]
        return [node.args] + _fold_return(body)
    if isinstance(node, ast.arguments):
        return list(node.posonlyargs) + list(node.args) + ([node.vararg] if node.vararg else []) + \
            list(node.kwonlyargs) + ([node.kwarg] if node.kwarg else []) + [d for d in node.defaults if d]
    if isinstance(node, ast.arg):
        return []
    if isinstance(node, ast.AnnAssign):
        return [c for c in (node.target, node.value) if c is not None]
    if isinstance(node, ast.Call):
        return [node.func] + list(node.args) + sorted(node.keywords, key=lambda k: k.arg or "")
    if isinstance(node, ast.Module):
        return [s for s in node.body if not _is_docstring(s)]
    return [c for c in ast.iter_child_nodes(node) if not isinstance(c, (ast.expr_context, ast.operator,
                                                                        ast.unaryop, ast.cmpop, ast.boolop))]


def _subtrees(node, out):
    """Appends the features of `node` and its descendants; returns `node`'s strings by depth."""
    kids = [_subtrees(c, out) for c in _children(node)]
    label = _label(node)
    by_depth = [label]
    for d in range(1, MAX_DEPTH):
        if not kids:
            break
        by_depth.append(label + "(" + ",".join(k[min(d - 1, len(k) - 1)] for k in kids) + ")")
    out.extend(by_depth)
    return by_depth


def features_of_source(text):
    """The normalized subtree multiset of the problem's Model class (a list of strings)."""
    tree = ast.parse(text)
    out = []
    _subtrees(model_class(tree), out)
    return sorted(out)


def features_of_file(path):
    with open(path, encoding="utf-8") as f:
        return features_of_source(f.read())

