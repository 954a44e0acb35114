"""`kforge env`, the command the service's jobs run: an episode replayed from action ids, its user errors,
and --record (a replay answers the programs of its log from it, so each program is evaluated once)."""

import json
import subprocess

from conftest import KFORGE, PROBLEM, REPO

PROB = str(REPO / "tests" / "problems" / PROBLEM)


def env(*args):
    return subprocess.run([KFORGE, "env", PROB] + list(args), capture_output=True, text=True, timeout=300)


def test_user_errors_say_what_to_fix(kforge_bin):
    p = env("--actions", "x")
    assert p.returncode == 2 and "'x' is not an action id" in p.stderr
    p = env("--actions", "99")
    assert p.returncode == 2 and "only 0..1 are legal there (1 is stop)" in p.stderr
    p = env("--actions", "0,0")
    assert p.returncode == 2 and "after the episode ended" in p.stderr


def test_record_answers_a_replay_from_the_log(kforge_bin, tmp_path):
    log = tmp_path / "ev.jsonl"
    first = env("--actions", "0", "--record", str(log))
    assert first.returncode == 0, first.stderr
    a = json.loads(first.stdout)
    assert a["evaluations"] == 2 and a["evaluations_new"] == 2 and a["measured"] is False
    assert len(log.read_text().splitlines()) == 2
    again = json.loads(env("--actions", "0", "--record", str(log)).stdout)
    assert again["evaluations_new"] == 0 and len(log.read_text().splitlines()) == 2
    assert again["last"] == a["last"] and again["schedule"] == a["schedule"]
    edit = json.loads(env("--actions", "0", "--last-edit").stdout)
    # An edit ends the episode here (nothing left to apply), so the end is evaluated anyway.
    assert edit["turn"] == 1 and edit["done"] is True and edit["evaluations"] == 2
