"""Issue #21's CPU check (CI, no GPU): every network of tests/zoo and every problem of tests/unseen is captured,
planned and built (nvcc) by `kforge bench --device cpu`, the way a user on a CPU machine would meet them.

Files that need a package kforge does not require are left out with the reason printed, never counted as
passed: `tv_*` (torchvision) and `zz_einops_*` (einops) when their package is not importable here. Their GPU
verification is in bench/results (the whole zoo, torchvision models included)."""
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OPTIONAL = (("tv_", "torchvision"), ("zz_einops_", "einops"))


def suite(tmp_path):
    root = tmp_path / "suite"
    left_out = []
    for folder in ("unseen", "zoo"):
        (root / folder).mkdir(parents=True)
        for f in sorted((REPO / "tests" / folder).glob("*.py")):
            needs = next((mod for prefix, mod in OPTIONAL if f.name.startswith(prefix)), None)
            if needs and importlib.util.find_spec(needs) is None:
                left_out.append(f"{folder}/{f.name} (needs {needs})")
                continue
            (root / folder / f.name).symlink_to(f)
    return root, left_out


def test_every_zoo_network_and_unseen_problem_builds_on_cpu(tmp_path):
    kforge = os.environ.get("KFORGE_BIN")
    if not kforge:
        pytest.skip("KFORGE_BIN is not set to a built kforge (ctest sets it)")
    root, left_out = suite(tmp_path)
    print("\nleft out (package not installed):", ", ".join(left_out) or "none")
    out = tmp_path / "bench.json"
    p = subprocess.run([kforge, "bench", "--suite", str(root), "--device", "cpu", "--protocol", "cuda-agent",
                        "--json", str(out), "--out", str(tmp_path / "work"), "--force"],
                       capture_output=True, text=True, timeout=3000)
    assert p.returncode == 0, p.stderr[-3000:]
    problems = json.loads(out.read_text())["problems"]
    expected = sum(1 for _ in root.glob("*/*.py"))
    assert len(problems) == expected
    failed = [f"{r['level']}/{r['problem']}: {r['outcome']}: {r.get('message', '')[:200]}"
              for r in problems if r["outcome"] != "ok"]
    builds = sorted(r["build_seconds"] for r in problems)
    print(f"built {len(problems) - len(failed)}/{len(problems)}; build seconds median {builds[len(builds) // 2]:.1f},"
          f" max {builds[-1]:.1f}")
    assert failed == [], "\n".join(failed)
    # Each record says where its build time went (issue #22 item 5): the stages' wall seconds and nvcc's.
    for r in problems:
        stages = r.get("build_stages", {})
        assert {"import", "plan", "codegen_and_build", "nvcc_seconds", "units_compiled"} <= stages.keys(), r["problem"]
        assert 0 <= stages["import"] <= r["build_seconds"] and stages["nvcc_seconds"] >= 0, (r["problem"], stages)
    imports = sorted(r["build_stages"]["import"] for r in problems)
    print(f"import seconds median {imports[len(imports) // 2]:.1f}, max {imports[-1]:.1f}")
