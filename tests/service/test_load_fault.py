"""Load and faults on loopback (issue #24): 64 concurrent sessions (create with its reset, then a step: two
evaluations each) on the CPU path;
a clean run for the figures, then a run in which a worker is killed mid-job and the server is killed
(SIGKILL, with its embedded Ray) and restarted on the same database. Nothing lost (every session
finishes, with its step applied once and its two evaluations recorded once), nothing answered twice
(no job result written twice). The figures are printed (ctest -V, or pytest -s)."""

import pytest

from conftest import needs_service

needs_service()

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sqlite3  # noqa: E402
import time  # noqa: E402


from conftest import PROBLEM, Server, headers, httpx  # noqa: E402
from kforge.service.loadtest import run  # noqa: E402

TOKEN = "tok-load"
SESSIONS = int(os.environ.get("KFORGE_SERVICE_LOAD_SESSIONS", "64"))


@pytest.fixture(scope="module")
def server(kforge_bin, tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("load") / "srv", ["--build-workers", "2", "--queue-limit", "1024"],
               {TOKEN: "load"})
    s.start()
    yield s
    s.stop()


def check_nothing_lost_nothing_twice(server, results):
    assert len(results) == SESSIONS
    for sid, r in results.items():
        assert r["first"]["status"] == "ok" and r["step"]["status"] == "ok", r
        s = httpx.get(server.url + "/v1/sessions/" + sid, headers=headers(TOKEN), timeout=30).json()
        assert s["actions_taken"] == [0], s  # the step applied once
        recs = httpx.get(server.url + "/v1/sessions/%s/records" % sid, headers=headers(TOKEN), timeout=30).json()
        assert [x["turn"] for x in recs["records"]] == [0, 1], recs  # reset, step: once each
    db = sqlite3.connect(str(server.work / "service.sqlite"))
    twice = db.execute("SELECT COUNT(*) FROM jobs WHERE answers > 1").fetchone()[0]
    unfinished = db.execute("SELECT COUNT(*) FROM jobs WHERE state != 'done'").fetchone()[0]
    per_session = db.execute("SELECT COUNT(*) FROM jobs WHERE session IN (%s) GROUP BY session" %
                             ",".join("?" * len(results)), list(results)).fetchall()
    retried = db.execute("SELECT COUNT(*) FROM jobs WHERE attempts > 1").fetchone()[0]
    db.close()
    assert twice == 0 and unfinished == 0
    assert sorted(n for (n,) in per_session) == [2] * SESSIONS  # no job made twice by a client's retry
    return retried


def test_load_clean(server):
    figures, results, errors = run(server.url, TOKEN, SESSIONS, PROBLEM, evaluate=False)
    print("\nkforge serve load, clean (CPU path, cost model; 2 build workers):", json.dumps(figures))
    assert errors == []
    check_nothing_lost_nothing_twice(server, results)
    assert figures["step_p99_s"] >= figures["step_p50_s"] > 0


def test_load_with_worker_and_server_killed(server):
    killed = {}

    def kill_worker():
        deadline = time.time() + 30
        while time.time() < deadline and "worker" not in killed:
            for w in httpx.get(server.url + "/v1/workers", headers=headers(TOKEN), timeout=10).json()["build"]:
                if w["job"]:
                    os.kill(w["pid"], signal.SIGKILL)
                    killed["worker"] = w
                    break
            time.sleep(0.05)

    def kill_server():
        t0 = time.time()
        server.kill()
        server.start()
        killed["server_down_s"] = round(time.time() - t0, 1)

    figures, results, errors = run(server.url, TOKEN, SESSIONS, PROBLEM, evaluate=False,
                                   events={SESSIONS // 8: kill_worker, SESSIONS // 4: kill_server})
    figures.update({"worker_killed": killed.get("worker", {}).get("worker"), "server_down_s": killed.get("server_down_s")})
    assert errors == [], errors[:5]
    retried = check_nothing_lost_nothing_twice(server, results)
    figures["jobs_retried_after_worker_death"] = retried
    print("\nkforge serve load, a worker and the server killed:", json.dumps(figures))
    assert "worker" in killed and killed.get("server_down_s")
    assert figures["retries_connection"] > 0  # the clients saw the server go away, and came back
