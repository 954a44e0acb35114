"""Issue #21: *every* torchvision classification model (as many as the installed torchvision lists, 80 in 0.26)
is captured by `kforge import` on the CPU, not only the fourteen of tests/zoo; and every segmentation (6) and video
(9) model too. The files come from
bench/torchvision_suite.py (generic for every model: weights=None, each model's own image size, BatchNorm
statistics calibrated); bench/coverage.py imports each one in its own process. Their GPU build and verification
are in bench/results (`bench/gpu_run.sh torchvision`).

Skipped, with the reason printed, when torchvision is not importable in kforge's Python."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_every_torchvision_classification_model_imports(tmp_path):
    kforge = os.environ.get("KFORGE_BIN")
    if not kforge:
        pytest.skip("KFORGE_BIN is not set to a built kforge (ctest sets it)")
    python = os.environ.get("KFORGE_PYTHON", sys.executable)
    if subprocess.run([python, "-c", "import torchvision"], capture_output=True).returncode != 0:
        pytest.skip(f"torchvision is not importable in {python} (python/requirements/core.txt installs it)")
    made = subprocess.run([python, str(REPO / "bench" / "torchvision_suite.py"), "--out", str(tmp_path / "suite"),
                           "--families", "all"],
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-2000:]
    files = sorted((tmp_path / "suite" / "torchvision").glob("tv_*.py"))
    listed = subprocess.run([python, "-c", "from torchvision import models; "
                             "print(sum(len(models.list_models(module=m)) for m in (models, models.segmentation, models.video)))"],
                            capture_output=True, text=True)
    assert len(files) == int(listed.stdout.strip()) >= 90, (len(files), listed.stdout)
    out = tmp_path / "coverage.json"
    p = subprocess.run([python, str(REPO / "bench" / "coverage.py"), str(tmp_path / "suite" / "torchvision"),
                        "--kforge", kforge, "--python", python, "-j", str(max(2, os.cpu_count() or 2)),
                        "--timeout", "600", "--json", str(out)], capture_output=True, text=True, timeout=3000)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == len(files)
    failed = [f"{r['file']}: {r['stage']} {r['status']}: {(r['error'] or '')[:300]}" for r in rows if r["status"] != "ok"]
    print(f"\nimported {len(rows) - len(failed)}/{len(rows)} torchvision models (classification, segmentation, video)")
    assert failed == [], "\n".join(failed)
