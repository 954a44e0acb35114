"""kforge costmodel: the learned roofline correction fitted on the committed H200 measurements, and
the error paths a user meets."""
import json
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))
MEASURED = os.path.join(HERE, "../../bench/results/measurements.sqlite")


def kforge(*args):
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, timeout=300)


def test_fit_on_the_committed_measurements_reports_rank_quality(tmp_path):
    db = tmp_path / "m.sqlite"
    shutil.copy(MEASURED, db)  # fitting opens it read-write (WAL files appear beside it)
    report, corr = tmp_path / "fit.json", tmp_path / "correction.json"
    r = kforge("costmodel", "fit", "--db", str(db), "--json", str(report), "--out", str(corr))
    assert r.returncode == 0, r.stderr
    assert "Spearman" in r.stdout and "roofline + learned correction" in r.stdout
    j = json.loads(report.read_text())
    assert j["held_out_rows"] > 10 and j["train_rows"] > 30
    assert -1 <= j["spearman_roofline"] <= 1 and -1 <= j["spearman_corrected"] <= 1
    c = json.loads(corr.read_text())
    assert c["format"] == "kforge.costmodel_correction/1" and c["trained_on"] == j["train_rows"] + j["held_out_rows"]
    # An existing output is not overwritten without --force.
    r = kforge("costmodel", "fit", "--db", str(db), "--out", str(corr))
    assert r.returncode == 2 and "--force" in r.stderr


def test_errors_say_what_is_wrong(tmp_path):
    r = kforge("costmodel", "fit", "--db", str(tmp_path / "absent.sqlite"))
    assert r.returncode == 2 and "no measurement database" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    r = kforge("costmodel", "ingest", str(bad), "--db", str(tmp_path / "m.sqlite"))
    assert r.returncode == 2 and "not valid JSON" in r.stderr
    other = tmp_path / "other.json"
    other.write_text('{"format": "something"}')
    r = kforge("costmodel", "ingest", str(other), "--db", str(tmp_path / "m.sqlite"))
    assert r.returncode == 2 and "not a kforge bench report" in r.stderr
    empty = tmp_path / "empty.json"
    empty.write_text('{"format": "kforge.bench/1", "predicted": false, "problems": []}')
    r = kforge("costmodel", "ingest", str(empty), "--db", str(tmp_path / "m2.sqlite"))
    assert r.returncode == 1 and "recorded 0 measurements" in r.stdout
    r = kforge("costmodel", "fit", "--db", str(tmp_path / "m2.sqlite"))
    assert r.returncode == 2 and "too few measurements" in r.stderr
