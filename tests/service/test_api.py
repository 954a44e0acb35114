"""kforge serve's API on loopback (no GPU): authentication, what-to-fix 400s, size limits, a full queue's
429, quotas, idempotency, skill and LLM sessions against the kforge binary's own answers, and a worker
killed in the middle of a job."""

import pytest

from conftest import needs_service

needs_service()

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402


from conftest import KFORGE, PROBLEM, REPO, Server, headers, httpx, wait_job  # noqa: E402

TOKEN, OTHER, TIGHT = "tok-alice", "tok-bob", "tok-tight"


@pytest.fixture(scope="module")
def server(kforge_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("serve")
    ds = work / "dataset"
    (ds / "tasks").mkdir(parents=True)
    (ds / "tasks" / "000000_ReLU_Tanh.py").write_text((REPO / "tests" / "problems" / PROBLEM).read_text())
    (ds / "index.jsonl").write_text(json.dumps({"name": "000000_ReLU_Tanh", "file": "tasks/000000_ReLU_Tanh.py"}) + "\n")
    tokens_file = work / "tokens.json"
    tokens_file.write_text(json.dumps({TIGHT: {"client": "tight", "max_pending": 1, "max_sessions": 3}}))
    s = Server(work / "srv", ["--build-workers", "2", "--queue-limit", "3", "--max-attempts", "2",
                              "--max-body-bytes", "65536", "--allow-test-delay", "--dataset", "tiny=%s" % ds,
                              "--tokens-file", str(tokens_file)], {TOKEN: "alice", OTHER: "bob"})
    s.start()
    yield s
    s.stop()


def post(server, path, body=None, token=TOKEN, wait=0, **hdr):
    h = headers(token) if token else {}
    h.update(hdr)
    return httpx.post(server.url + path, json=body, headers=h, params={"wait": wait}, timeout=120)


def get(server, path, token=TOKEN, **params):
    return httpx.get(server.url + path, headers=headers(token) if token else {}, params=params, timeout=120)


def new_session(server, token=TOKEN, mode="skill", task=None, **hdr):
    r = post(server, "/v1/sessions", {"task": task or {"kind": "kernelbench", "problem": PROBLEM}, "mode": mode},
             token=token, wait=60, **hdr)
    assert r.status_code in (200, 202), r.text
    return wait_job(server.url, token, r.json())


def kforge_env(*args):
    p = subprocess.run([KFORGE, "env", str(REPO / "tests" / "problems" / PROBLEM)] + list(args),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_health_openapi_and_metrics_are_open(server):
    h = get(server, "/v1/health", token=None).json()
    assert h["status"] == "ok" and h["api"] == "v1"
    assert h["device"] == "cpu" and "predicted" in h["evaluation"]  # no GPU here, and it says so
    assert h["workers"]["build"] == 2 and h["workers"]["gpu"] == 0
    doc = get(server, "/openapi.json", token=None).json()
    for path in ["/v1/sessions", "/v1/sessions/{sid}/step", "/v1/sessions/{sid}/submit", "/v1/sessions/{sid}/reset",
                 "/v1/sessions/{sid}/evaluate", "/v1/sessions/{sid}/reward", "/v1/sessions/{sid}/records",
                 "/v1/sessions/{sid}/best", "/v1/jobs/{jid}", "/v1/health", "/v1/metrics"]:
        assert path in doc["paths"], path
    assert "kforge_jobs_state" in get(server, "/v1/metrics", token=None).text


def test_authentication_is_enforced(server):
    body = {"task": {"kind": "kernelbench", "problem": PROBLEM}}
    for token in (None, "wrong"):
        for r in (post(server, "/v1/sessions", body, token=token), get(server, "/v1/workers", token=token),
                  post(server, "/v1/sessions", {"garbage": 1}, token=token)):
            assert r.status_code == 401, r.text
            assert r.headers["www-authenticate"] == "Bearer"
    # A session is its client's: another token does not see it.
    sid = new_session(server)["session"]
    assert get(server, "/v1/sessions/" + sid, token=OTHER).status_code == 404
    assert get(server, "/v1/sessions/" + sid).status_code == 200


@pytest.mark.parametrize("body,fix", [
    ({}, "task: Field required"),
    ({"task": {"kind": "kernelbench", "problem": PROBLEM}, "mode": "skil"}, "mode: Input should be 'skill' or 'llm'"),
    ({"task": {"kind": "kernelbench", "problem": "../../etc/passwd.py"}}, "relative .py path under a problem root"),
    ({"task": {"kind": "kernelbench", "problem": "level9/none.py"}}, "no problem level9/none.py"),
    ({"task": {"kind": "dataset", "dataset": "tiny", "row": 5}}, "dataset tiny has rows 0..0"),
    ({"task": {"kind": "dataset", "dataset": "nope", "row": 0}}, "no dataset 'nope'; the server has: tiny"),
    ({"task": {"kind": "file", "code": "print(1)"}}, "KernelBench-format problem"),
    ({"task": {"kind": "synth", "seed": -1}}, "task.synth.seed: Input should be greater than or equal to 0"),
])
def test_bad_input_is_400_with_what_to_fix(server, body, fix):
    r = post(server, "/v1/sessions", body)
    assert r.status_code == 400, r.text
    assert fix in r.json()["error"], r.json()
    assert "Traceback" not in r.text


def test_bad_json_and_oversized_body(server):
    r = httpx.post(server.url + "/v1/sessions", content=b"{not json", headers={**headers(TOKEN),
                                                                              "content-type": "application/json"})
    assert r.status_code == 400 and "Traceback" not in r.text
    big = {"task": {"kind": "file", "code": "class Model: pass\ndef get_inputs(): pass\n#" + "x" * 70000}}
    r = post(server, "/v1/sessions", big)
    assert r.status_code == 413 and "65536" in r.json()["error"]


def test_skill_session_matches_the_binary(server):
    first = new_session(server)
    assert first["result"]["status"] == "ok", first
    sid = first["session"]
    obs = first["result"]["observation"]
    direct = kforge_env()  # the same reset, from the binary itself
    assert [a["action"] for a in obs["actions"]] == [a["action"] for a in direct["actions"]]
    assert obs["last"]["result"]["t_candidate"] == pytest.approx(direct["last"]["result"]["t_candidate"])
    assert first["result"]["predicted"] is True and obs["measured"] is False
    assert "cost model" in obs["evaluator"] and first["result"]["note"]

    r = post(server, "/v1/sessions/%s/step" % sid, {"action": 10 ** 4})
    assert r.status_code == 400 and "is not legal now" in r.json()["error"]
    r = post(server, "/v1/sessions/%s/step" % sid, {"action": 0}, wait=60)
    step = wait_job(server.url, TOKEN, r.json())
    assert step["result"]["status"] == "ok", step
    direct = kforge_env("--actions", "0")
    got = step["result"]["observation"]
    assert got["turn"] == direct["turn"] == 1
    assert got["schedule"] == direct["schedule"]
    assert got["last"]["result"]["t_candidate"] == pytest.approx(direct["last"]["result"]["t_candidate"])

    s = get(server, "/v1/sessions/" + sid).json()
    assert s["actions_taken"] == [0] and s["observation"]["predicted"] is True
    recs = get(server, "/v1/sessions/%s/records" % sid).json()["records"]
    assert [r["turn"] for r in recs] == [0, 1] and all(r["predicted"] for r in recs)
    rw = get(server, "/v1/sessions/%s/reward" % sid).json()
    assert rw["predicted"] is True and rw["reward"] == got["episode_reward"] and "estimate" in rw["note"]
    best = get(server, "/v1/sessions/%s/best" % sid).json()["best"]
    ok = [r for r in recs if r["outcome"] == "ok"]
    assert best["kind"] == "schedule" and best["t_candidate"] == min(r["t_candidate"] for r in ok)
    assert best["predicted"] is True


def test_dataset_row_session(server):
    first = new_session(server, task={"kind": "dataset", "dataset": "tiny", "row": 0})
    assert first["result"]["status"] == "ok"
    assert first["result"]["observation"]["task"].endswith("000000_ReLU_Tanh")


def test_llm_submit_without_gpu_is_static_checks_only(server):
    sid = new_session(server, mode="llm")["session"]
    src = (REPO / "tests" / "problems" / PROBLEM).read_text()
    clean = src + "\n\nclass ModelNew(Model):\n    pass\n"
    r = wait_job(server.url, TOKEN, post(server, "/v1/sessions/%s/submit" % sid, {"model_new": clean}, wait=60).json())
    res = r["result"]
    assert res["result"]["outcome"] == "unverified" and res["reward"] is None and res["predicted"] is True
    assert "no GPU" in res["note"]
    forbidden = src + "\n\nimport os\nclass ModelNew(Model):\n    def forward(self, x):\n        os.getenv('X')\n" \
                      "        return torch.tanh(x)\n"
    r = wait_job(server.url, TOKEN, post(server, "/v1/sessions/%s/submit" % sid, {"model_new": forbidden}, wait=60).json())
    assert r["result"]["result"]["outcome"] == "forbidden" and r["result"]["reward"] == -1
    assert r["result"]["result"]["findings"]
    rw = get(server, "/v1/sessions/%s/reward" % sid).json()
    assert rw["reward"] == -1 and rw["submissions"] == 2
    assert get(server, "/v1/sessions/%s/best" % sid).json()["best"] is None
    r = post(server, "/v1/sessions/%s/submit" % sid, {"model_new": "print('hello')"})
    assert r.status_code == 400 and "ModelNew" in r.json()["error"]


def test_idempotency_key_answers_the_same_job(server):
    sid = new_session(server)["session"]
    a = post(server, "/v1/sessions/%s/step" % sid, {"action": 0}, **{"Idempotency-Key": "k-step-1"}).json()
    b = post(server, "/v1/sessions/%s/step" % sid, {"action": 0}, **{"Idempotency-Key": "k-step-1"}).json()
    assert a["job"] == b["job"]
    done = wait_job(server.url, TOKEN, b)
    assert get(server, "/v1/sessions/" + sid).json()["actions_taken"] == [0]  # stepped once
    assert done["attempts"] == 1


def test_full_queue_answers_429_with_retry_after(server):
    # 2 workers busy for a while, then the queue (limit 3) fills: the next job is refused, not queued.
    sids = [new_session(server)["session"] for _ in range(6)]
    jobs, refused = [], []
    for sid in sids:
        r = post(server, "/v1/sessions/%s/evaluate" % sid, **{"X-Test-Delay": "4"})
        if r.status_code == 429:
            refused.append(r)
        else:
            assert r.status_code == 202, r.text
            jobs.append(r.json())
        time.sleep(0.2)
    assert len(refused) >= 1, "six jobs on 2 workers and a queue of 3: one must be refused"
    assert len(jobs) <= 5
    assert int(refused[0].headers["retry-after"]) >= 1 and "queue is full" in refused[0].json()["error"]
    h = get(server, "/v1/health", token=None).json()
    assert h["queues"]["build"] <= 3
    for j in jobs:
        assert wait_job(server.url, TOKEN, j)["result"]["status"] == "ok"
    assert "kforge_rejected_queue_full_total" in get(server, "/v1/metrics", token=None).text


def test_client_quota(server):
    sids = [new_session(server, token=TIGHT)["session"] for _ in range(2)]
    r1 = post(server, "/v1/sessions/%s/evaluate" % sids[0], token=TIGHT, **{"X-Test-Delay": "2"})
    assert r1.status_code == 202
    r2 = post(server, "/v1/sessions/%s/evaluate" % sids[1], token=TIGHT)
    assert r2.status_code == 429 and "quota" in r2.json()["error"] and r2.headers["retry-after"]
    wait_job(server.url, TIGHT, r1.json())
    new_session(server, token=TIGHT)
    r = post(server, "/v1/sessions", {"task": {"kind": "kernelbench", "problem": PROBLEM}}, token=TIGHT)
    assert r.status_code == 429 and "open sessions" in r.json()["error"]


def worker_running(server, job_id, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for w in get(server, "/v1/workers").json()["build"]:
            if w["job"] == job_id:
                return w
        time.sleep(0.2)
    raise AssertionError("job %s never started" % job_id)


def test_killed_worker_job_completes_elsewhere(server):
    sid = new_session(server)["session"]
    job = post(server, "/v1/sessions/%s/step" % sid, {"action": 0}, **{"X-Test-Delay": "6"}).json()
    w = worker_running(server, job["job"])
    os.kill(w["pid"], signal.SIGKILL)
    done = wait_job(server.url, TOKEN, job, timeout=180)
    assert done["result"]["status"] == "ok", done
    assert done["attempts"] == 2 and len(done["workers"]) == 2 and done["workers"][0] == w["worker"]
    assert done["workers"][1] != w["worker"]
    assert get(server, "/v1/sessions/" + sid).json()["actions_taken"] == [0]
    # The pool replaced the dead worker.
    pids = [x["pid"] for x in get(server, "/v1/workers").json()["build"]]
    assert len(pids) == 2 and w["pid"] not in pids


def test_job_whose_workers_keep_dying_is_a_fault(server):
    sid = new_session(server)["session"]
    job = post(server, "/v1/sessions/%s/evaluate" % sid, **{"X-Test-Delay": "6"}).json()
    for attempt in range(2):  # --max-attempts 2
        w = worker_running(server, job["job"])
        os.kill(w["pid"], signal.SIGKILL)
        time.sleep(1.0)
    done = wait_job(server.url, TOKEN, job, timeout=120)
    assert done["result"]["status"] == "fault" and "died 2 times" in done["result"]["message"]
    assert done["attempts"] == 2


def test_synthesized_task_session(server):
    # kforge synth makes the task (seed 7, one task), then the session's reset runs on it: two chained jobs.
    from kforge.service.client import Client
    c = Client(server.url, TOKEN, timeout=300)
    sid, first = c.create_session({"kind": "synth", "seed": 7, "max_ops": 3})
    assert first["status"] == "ok", first
    rows = (server.work / "synth" / "seed-7-ops-3" / "index.jsonl").read_text().splitlines()
    made = json.loads(rows[0])["file"]
    assert first["observation"]["task"] == os.path.splitext(os.path.basename(made))[0]
    assert c.session(sid)["problem"] == os.path.basename(made)
    c.close()
