#!/usr/bin/env python3
"""Checks that every #include between kforge's layers follows the dependencies CMakeLists.txt declares.

The layers and their DEPS are read from CMakeLists.txt (`kforge_layer(name SOURCES ... DEPS kforge_x ...)`, and
the `kforge` executable's link list for src/cli), so the build's graph is the only statement of the rule. A file
in src/<layer>/ may include "<layer>/..." and "<dep>/..." for any layer its DEPS reach (transitively); any other
include of a layer folder is a violation. The build enforces the same rule (each layer's headers are on the
include path only of the targets that link it); this check says it in words and runs without a compiler.

Usage: scripts/check_layers.py [REPO_ROOT]   (exit 0: clean, 1: violations, each printed with file:line)
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

LAYER_CALL = re.compile(r"kforge_layer\(\s*(\w+)(.*?)\)", re.S)
# The command line's links: kforge_cli()'s own (target_link_libraries(${target} PRIVATE ...)) and what the
# `kforge` executable adds (kforge_cli(kforge ...)).
EXE_LINK = re.compile(r"target_link_libraries\(\s*(?:kforge|\$\{target\})\s+PRIVATE(.*?)\)|kforge_cli\(\s*kforge\s+(.*?)\)",
                      re.S)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+)/', re.M)


def declared_layers(cmake_text: str) -> dict[str, set[str]]:
    """Each layer's direct dependencies (layer names, without the kforge_ prefix)."""
    deps: dict[str, set[str]] = {}
    for m in LAYER_CALL.finditer(cmake_text):
        name, args = m.group(1), m.group(2)
        if name == "name" or name.startswith("$"):  # the function's own definition
            continue
        after = args.split("DEPS", 1)[1] if "DEPS" in args else ""
        deps.setdefault(name, set()).update(re.findall(r"\bkforge_(\w+)", after))
    for exe in EXE_LINK.finditer(cmake_text):
        deps.setdefault("cli", set()).update(re.findall(r"\bkforge_(\w+)", exe.group(1) or exe.group(2)))
    deps.get("cli", set()).discard("cli_common")  # the command line's own object library
    return deps


def closure(deps: dict[str, set[str]], layer: str) -> set[str]:
    seen: set[str] = set()
    todo = [layer]
    while todo:
        cur = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        todo.extend(deps.get(cur, ()))
    return seen


def violations(root: Path) -> list[str]:
    deps = declared_layers((root / "CMakeLists.txt").read_text())
    layers = set(deps)
    out = []
    for layer in sorted(layers):
        folder = root / "src" / layer
        if not folder.is_dir():
            continue
        allowed = closure(deps, layer)
        for f in sorted(folder.rglob("*")):
            if f.suffix not in {".h", ".cpp", ".def", ".cuh", ".cu"}:
                continue
            text = f.read_text(errors="replace")
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                if target in layers and target not in allowed:
                    line = text.count("\n", 0, m.start()) + 1
                    out.append(f"{f.relative_to(root)}:{line}: layer '{layer}' includes '{target}/', which it does not "
                               f"depend on (its DEPS reach: {', '.join(sorted(allowed - {layer})) or 'nothing'}); "
                               f"move the code to a lower layer or declare the dependency in CMakeLists.txt if "
                               f"it points down the layers")
    # The declared graph itself must have no cycle.
    for layer in sorted(layers):
        for d in deps[layer]:
            if layer in closure(deps, d) and d != layer:
                out.append(f"CMakeLists.txt: layers '{layer}' and '{d}' depend on each other")
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    found = violations(root)
    for v in found:
        print(v)
    if found:
        print(f"check_layers: {len(found)} include(s) across layers the wrong way", file=sys.stderr)
        return 1
    print(f"check_layers: every include follows the declared layers ({root / 'CMakeLists.txt'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
