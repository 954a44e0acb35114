"""scripts/check_catalogue_files.py (ctest catalogue_version): stale files fail unless listed as known stale, and a
listed file that is current fails too, on a made-up tree with a stand-in `kforge catalogue --check`."""
import stat
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import check_catalogue_files  # noqa: E402

LOG = "bench/results/2026-01-01-explore-gpu_abc.jsonl"

# Exits 1 naming every argument listed in STALE (a file next to the script), else 0.
FAKE_KFORGE = """#!/usr/bin/env python3
import sys
from pathlib import Path
stale = set(Path(__file__).with_name("STALE").read_text().split())
bad = [a for a in sys.argv[3:] if a in stale]
for a in sys.argv[3:]:
    print(("stale: " if a in bad else "ok: ") + a)
sys.exit(1 if bad else 0)
"""


def tree(tmp_path, stale, listed):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/training.md").write_text(f"replay `{LOG}`\n")
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies/p.pt").write_bytes(b"x")
    (tmp_path / "bench/results").mkdir(parents=True)
    (tmp_path / LOG).write_text("{}\n")
    if listed:
        (tmp_path / "bench/results/known-stale-logs.txt").write_text(f"# comment\n{LOG} # needs the GPU\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "STALE").write_text("\n".join(stale))
    kforge = bindir / "kforge"
    kforge.write_text(FAKE_KFORGE)
    kforge.chmod(kforge.stat().st_mode | stat.S_IEXEC)
    return tmp_path, str(kforge)


def run(monkeypatch, root, kforge):
    monkeypatch.setattr(sys, "argv", ["check", str(root), kforge])
    return check_catalogue_files.main()


def test_all_current_passes(tmp_path, monkeypatch):
    assert run(monkeypatch, *tree(tmp_path, stale=[], listed=False)) == 0


def test_unlisted_stale_log_fails(tmp_path, monkeypatch, capsys):
    assert run(monkeypatch, *tree(tmp_path, stale=[LOG], listed=False)) == 1
    assert "Not yet stale-listed: " + LOG in capsys.readouterr().out


def test_listed_stale_log_is_reported_not_failed(tmp_path, monkeypatch, capsys):
    assert run(monkeypatch, *tree(tmp_path, stale=[LOG], listed=True)) == 0
    assert "known stale" in capsys.readouterr().out


def test_listed_log_that_is_current_fails(tmp_path, monkeypatch, capsys):
    assert run(monkeypatch, *tree(tmp_path, stale=[], listed=True)) == 1
    assert "take them off the list" in capsys.readouterr().out


def test_a_stale_policy_fails_even_when_the_log_is_listed(tmp_path, monkeypatch):
    assert run(monkeypatch, *tree(tmp_path, stale=[LOG, "policies/p.pt"], listed=True)) == 1
