#!/usr/bin/env python3
"""Checks that the shipped policies and the explore logs the docs and scripts use were made with today's
skill catalogue and action space (issue #29): `kforge catalogue --check` on policies/*.pt and on every
bench/results/*explore*.jsonl that docs/, README.md, policies/README.md, bench/*.sh, bench/README.md or
scripts/*.sh name. A stale file fails the check, and the message names its version, today's, and the
command that makes it again.

An explore log listed in bench/results/known-stale-logs.txt (one path per line, then " # " and why it is not
made again yet) is reported as known stale and does not fail the check: refreshing one needs the GPU machine.
A listed log that matches today's catalogue fails it (take it off the list), as does any unlisted stale file.

Usage: scripts/check_catalogue_files.py REPO_ROOT KFORGE_BIN
(exit 0: all match, 1: a file is stale or unreadable; the files checked are printed)
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

LOG_REFERENCE = re.compile(r"bench/results/[\w.-]*explore[\w.-]*\.jsonl")


def referenced_logs(root: Path) -> list[str]:
    """The explore logs the docs and scripts name (existing files only; a name that is not a file fails)."""
    sources = [*root.glob("docs/*.md"), root / "README.md", root / "policies/README.md", root / "bench/README.md",
               *root.glob("bench/*.sh"), *root.glob("scripts/*.sh")]
    found: set[str] = set()
    for src in sources:
        if src.is_file():
            found.update(LOG_REFERENCE.findall(src.read_text()))
    return sorted(found)


def known_stale(root: Path) -> dict[str, str]:
    """bench/results/known-stale-logs.txt: path -> why it is not made again yet."""
    listing = root / "bench/results/known-stale-logs.txt"
    out: dict[str, str] = {}
    if listing.is_file():
        for line in listing.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                path, _, why = line.partition(" # ")
                out[path.strip()] = why.strip()
    return out


def check(kforge: str, root: Path, files: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([kforge, "catalogue", "--check", *files], cwd=root, capture_output=True, text=True)


def main() -> int:
    root, kforge = Path(sys.argv[1]), sys.argv[2]
    files = sorted(str(p.relative_to(root)) for p in root.glob("policies/*.pt")) + referenced_logs(root)
    missing = [f for f in files if not (root / f).is_file()]
    if missing:
        print("named by the docs but not in the repository: " + ", ".join(missing))
        return 1
    print("checking:", *files, sep="\n  ")
    r = subprocess.run([kforge, "catalogue", "--check", *files], cwd=root, capture_output=True, text=True)
    if r.returncode == 2 and "needs libtorch" in r.stderr:  # a kforge without libtorch reads no checkpoint
        print("this kforge was built without libtorch: the checkpoints are not checked here")
        files = [f for f in files if not f.endswith(".pt")]
        r = subprocess.run([kforge, "catalogue", "--check", *files], cwd=root, capture_output=True, text=True)
    print(r.stdout + r.stderr, end="")
    if r.returncode == 0:
        listed_current = [f for f in known_stale(root) if f in files]
        if listed_current:
            print("\nlisted in bench/results/known-stale-logs.txt but made with today's catalogue: take them off "
                  "the list: " + ", ".join(listed_current))
            return 1
        return 0
    # Which files are stale: each checked alone (the command's exit says whether any is).
    stale = [f for f in files if check(kforge, root, [f]).returncode != 0]
    known = known_stale(root)
    unexpected = [f for f in stale if f not in known]
    for f in stale:
        if f in known:
            print(f"known stale (bench/results/known-stale-logs.txt): {f}: {known[f]}")
    if unexpected:
        print("\nThe files above marked stale were made with another skill catalogue or action space: make them "
              "again with the command each names (the policy on a CPU; an explore log needs the GPU machine). "
              "Not yet stale-listed: " + ", ".join(unexpected))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
