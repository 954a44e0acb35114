"""kforge serve's HTTP/JSON API, version 1 (FastAPI; the OpenAPI document is at /openapi.json, the
interactive one at /docs). docs/service.md describes every endpoint.

Every request but /v1/health and /v1/metrics carries `Authorization: Bearer TOKEN`. Long work is a job:
a POST answers 202 with the job (or 200 with its result when it finished within `?wait=SECONDS`), and
GET /v1/jobs/{id}?wait=SECONDS fetches it. A POST that carries an `Idempotency-Key` header is done once:
the same key again answers the same job.
"""

import hashlib
import json
import logging
import time
from contextlib import asynccontextmanager
from pathlib import Path

import ray
from fastapi import FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from kforge.service.dispatch import ApiError, Service, bad_input
from kforge.service.limits import BodyLimit
from kforge.service.models import CreateSession, Step, Submit

log = logging.getLogger("kforge.service")
API_VERSION = "v1"
OPEN_PATHS = ("/v1/health", "/v1/metrics")


def job_view(job):
    result = job["result"]
    if isinstance(result, dict) and "evlog" in result:  # the session's log travels with jobs, not to clients
        result = {k: v for k, v in result.items() if k != "evlog"}
    out = {"job": job["id"], "kind": job["kind"], "session": job["session"], "state": job["state"],
           "attempts": job["attempts"], "workers": job["workers"], "result": result}
    return JSONResponse(out, status_code=200 if job["state"] == "done" else 202)


def session_view(s):
    obs = s["observation"] or {}
    return {"session": s["id"], "mode": s["mode"], "protocol": s["protocol"], "task": s["origin"],
            "problem": Path(s["problem"]).name if s["problem"] else None, "actions_taken": s["actions"],
            "pending_job": s["pending_job"], "closed": bool(s["closed"]),
            "observation": observation_view(obs) if obs else None}


def observation_view(obs):
    keys = ["task", "turn", "done", "reward", "episode_reward", "evaluations", "evaluated", "evaluator", "measured",
            "actions", "last", "best", "info"]
    out = {k: obs.get(k) for k in keys}
    out["predicted"] = not obs.get("measured", False)
    return out


def make_app(cfg):
    svc = Service(cfg)

    @asynccontextmanager
    async def lifespan(app):
        await svc.start()
        yield
        await svc.stop()

    app = FastAPI(title="kforge serve", version="1.0.0", lifespan=lifespan,
                  description="Task sessions over kforge's environment: reset, step (skill mode), submit (LLM mode), "
                              "evaluate, reward, records and best program, on a Ray pool of build and GPU "
                              "evaluation workers. Without a GPU, results are the cost model's predictions and "
                              "say so (`predicted: true`).")
    app.state.svc = svc
    app.add_middleware(BodyLimit, max_bytes=cfg.max_body_bytes, metrics=svc.metrics)

    @app.exception_handler(ApiError)
    async def api_error(request, e):
        svc.metrics.status(e.status)
        return JSONResponse({"error": e.message}, status_code=e.status, headers=e.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request, e):
        svc.metrics.status(400)
        fixes = []
        for err in e.errors():
            where = ".".join(str(x) for x in err.get("loc", ()) if x not in ("body",)) or "body"
            fixes.append("%s: %s" % (where, err.get("msg", "invalid")))
        return JSONResponse({"error": "the request is not valid; fix: " + "; ".join(fixes), "fix": fixes},
                            status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, e):
        svc.metrics.status(e.status_code)
        return JSONResponse({"error": str(e.detail)}, status_code=e.status_code)

    @app.exception_handler(Exception)
    async def internal_error(request, e):
        svc.metrics.status(500)
        ref = hashlib.sha1(("%s%s" % (time.time(), id(e))).encode()).hexdigest()[:10]
        log.error("internal error %s: %s: %s", ref, type(e).__name__, e)
        return JSONResponse({"error": "internal error (reference %s, in the server's log)" % ref}, status_code=500)

    def token_client(authorization):
        if not authorization or not authorization.startswith("Bearer "):
            return None, "send the header `Authorization: Bearer TOKEN` (a token the server was started with)"
        client = cfg.tokens.get(authorization[len("Bearer "):].strip())
        return client, None if client else "unknown token"

    @app.middleware("http")
    async def authenticate(request: Request, call_next):
        # Before the body is read or validated: an unauthenticated request learns nothing else.
        svc.metrics.counters["requests"] += 1
        if request.url.path.startswith("/v1/") and request.url.path not in OPEN_PATHS:
            client, why = token_client(request.headers.get("authorization"))
            if client is None:
                svc.metrics.status(401)
                return JSONResponse({"error": why}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return await call_next(request)

    def client_of(authorization):
        client, why = token_client(authorization)
        if client is None:
            raise ApiError(401, why, {"WWW-Authenticate": "Bearer"})
        return client

    def owned(sid, client):
        s = svc.store.session(sid)
        if s is None or s["client"] != client:
            raise ApiError(404, "no session %s for this client (create one with POST /v1/sessions)" % sid)
        if s["closed"]:
            raise ApiError(409, "session %s is closed" % sid)
        return s

    async def answer(job, wait):
        if wait > 0:
            job = await svc.wait(job["id"], min(wait, cfg.max_wait_s))
        return job_view(job)

    Auth = Header(None, description="Bearer TOKEN")
    Idem = Header(None, alias="Idempotency-Key", max_length=200,
                  description="the same key again answers the same job, not a new one")
    Wait = Query(0.0, ge=0, le=600, description="seconds to wait for the result before answering 202")

    @app.get("/v1/health")
    async def health():
        return {"status": "ok", "api": API_VERSION, "device": svc.device,
                "evaluation": "measured on GPUs" if svc.device == "cuda" else
                              "predicted by the cost model (no GPU in the pool)",
                "workers": {n: p.size() for n, p in svc.pools.items()},
                "queues": {n: p.waiting() for n, p in svc.pools.items()},
                "ray": {"address": cfg.address or "embedded",
                        "resources": {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU")}}}

    @app.get("/v1/metrics", response_class=PlainTextResponse)
    async def metrics():
        gauges = {"queue_waiting{pool=\"%s\"}" % n: p.waiting() for n, p in svc.pools.items()}
        gauges.update({"workers{pool=\"%s\"}" % n: p.size() for n, p in svc.pools.items()})
        gauges.update({"jobs_state{state=\"%s\"}" % k: v for k, v in svc.store.counts().items()})
        return svc.metrics.render(gauges)

    @app.get("/v1/workers")
    async def workers(authorization: str = Auth):
        client_of(authorization)
        return {n: p.describe() for n, p in svc.pools.items()}

    @app.post("/v1/sessions", status_code=202)
    async def create_session(body: CreateSession, wait: float = Wait, authorization: str = Auth,
                             idem: str = Idem):
        client = client_of(authorization)
        existing = svc.store_idem(client, idem) if idem else None
        if existing:
            return await answer(svc.store.job(existing["id"]), wait)
        if svc.store.open_sessions(client) >= cfg.quota(client)["max_sessions"]:
            raise ApiError(429, "client %s has %d open sessions, its quota; close one (DELETE /v1/sessions/ID)"
                           % (client, cfg.quota(client)["max_sessions"]), {"Retry-After": "30"})
        t = body.task
        if t.kind == "synth":
            problem, kind = "", "synth"
            payload = {"seed": t.seed, "max_ops": t.max_ops, "max_turns": body.max_turns,
                       "out": str(Path(cfg.work_dir) / "synth" / ("seed-%d-ops-%d" % (t.seed, t.max_ops)))}
        else:
            problem, kind = resolve_task(cfg, t), "env"
            payload = {"problem": problem, "protocol": body.protocol, "device": svc.device, "actions": [],
                       "max_turns": body.max_turns}
        origin = dict(t.model_dump(), max_turns=body.max_turns)
        job = await svc.submit(client, None, kind, payload, idem, (body.mode, problem, body.protocol, origin))
        return await answer(job, wait)

    @app.get("/v1/sessions/{sid}")
    async def get_session(sid: str, authorization: str = Auth):
        return session_view(owned(sid, client_of(authorization)))

    @app.delete("/v1/sessions/{sid}")
    async def close_session(sid: str, authorization: str = Auth):
        owned(sid, client_of(authorization))
        svc.store.close_session(sid)
        return {"session": sid, "closed": True}

    def env_payload(s, actions, last_edit=False, delay=None, fresh=False):
        if not s["problem"]:
            raise ApiError(409, "the session's task is still being synthesized; wait for its job")
        # The session's evaluation log: a program measured before in this session is not measured again
        # (evaluate asks for fresh measurements).
        p = {"problem": s["problem"], "protocol": s["protocol"], "device": svc.device, "actions": actions,
             "last_edit": last_edit, "max_turns": s["origin"].get("max_turns", 150),
             "evlog": None if fresh else (s.get("evlog") or "")}
        if delay and cfg.allow_test_delay:
            p["test_delay_s"] = delay
        return p

    TestDelay = Header(None, alias="X-Test-Delay", description="fault-injection tests only (--allow-test-delay)")

    @app.post("/v1/sessions/{sid}/reset", status_code=202)
    async def reset(sid: str, wait: float = Wait, authorization: str = Auth, idem: str = Idem,
                    delay: float = TestDelay):
        client = client_of(authorization)
        s = owned(sid, client)
        return await answer(await svc.submit(client, sid, "env", env_payload(s, [], delay=delay), idem), wait)

    @app.post("/v1/sessions/{sid}/step", status_code=202)
    async def step(sid: str, body: Step, wait: float = Wait, authorization: str = Auth, idem: str = Idem,
                   delay: float = TestDelay):
        client = client_of(authorization)
        s = owned(sid, client)
        existing = svc.store_idem(client, idem) if idem else None
        if existing:
            return await answer(svc.store.job(existing["id"]), wait)
        if s["mode"] != "skill":
            raise bad_input("step takes a skill-mode session; this one is in llm mode (use /submit)")
        obs = s["observation"]
        if obs is None:
            raise ApiError(409, "the session has no observation yet; wait for its reset job")
        if obs.get("done"):
            raise bad_input("the episode is over (done); reset the session to start again")
        n = len(obs.get("actions") or [])
        if body.action >= n:
            raise bad_input("action %d is not legal now: choose an id from 0 to %d from the observation's "
                            "`actions` (%d is stop)" % (body.action, n - 1, n - 1))
        payload = env_payload(s, s["actions"] + [body.action], last_edit=not body.evaluate, delay=delay)
        return await answer(await svc.submit(client, sid, "env", payload, idem), wait)

    @app.post("/v1/sessions/{sid}/submit", status_code=202)
    async def submit(sid: str, body: Submit, wait: float = Wait, authorization: str = Auth, idem: str = Idem,
                     delay: float = TestDelay):
        client = client_of(authorization)
        s = owned(sid, client)
        if "ModelNew" not in body.model_new:
            raise bad_input("model_new must be the source of a Python file that defines class ModelNew")
        payload = {"problem": s["problem"], "protocol": s["protocol"], "device": svc.device,
                   "candidate": body.model_new, "profile": body.profile}
        if delay and cfg.allow_test_delay:
            payload["test_delay_s"] = delay
        return await answer(await svc.submit(client, sid, "submit", payload, idem), wait)

    @app.post("/v1/sessions/{sid}/evaluate", status_code=202)
    async def evaluate(sid: str, wait: float = Wait, authorization: str = Auth, idem: str = Idem,
                       delay: float = TestDelay):
        client = client_of(authorization)
        s = owned(sid, client)
        if s["mode"] == "llm" or (s["candidate"] and not s["actions"]):
            if not s["candidate"]:
                raise bad_input("nothing to evaluate: submit a ModelNew first (/submit)")
            payload = {"problem": s["problem"], "protocol": s["protocol"], "device": svc.device,
                       "candidate": s["candidate"], "profile": True}
            if delay and cfg.allow_test_delay:
                payload["test_delay_s"] = delay
            return await answer(await svc.submit(client, sid, "submit", payload, idem), wait)
        payload = env_payload(s, s["actions"], delay=delay, fresh=True)
        return await answer(await svc.submit(client, sid, "env", payload, idem), wait)

    @app.get("/v1/sessions/{sid}/reward")
    async def reward(sid: str, authorization: str = Auth):
        s = owned(sid, client_of(authorization))
        recs = svc.store.records(sid)
        if s["mode"] == "skill" and s["observation"]:
            obs = s["observation"]
            return {"session": sid, "reward": obs.get("episode_reward"), "predicted": not obs.get("measured"),
                    "turn": obs.get("turn"), "done": obs.get("done"),
                    "note": None if obs.get("measured") else
                    "the paper's milestone reward on cost-model times: an estimate, correctness not established"}
        subs = [r for r in recs if r["kind"] == "submit"]
        rewards = [r["reward"] for r in subs if r["reward"] is not None]
        return {"session": sid, "reward": max(rewards) if rewards else None,
                "predicted": not any(not r["predicted"] for r in subs), "submissions": len(subs),
                "note": None if rewards else "no measured submission: no reward (only a GPU establishes correctness)"}

    @app.get("/v1/sessions/{sid}/records")
    async def records(sid: str, authorization: str = Auth):
        owned(sid, client_of(authorization))
        out = []
        for r in svc.store.records(sid):
            out.append({"seq": r["seq"], "job": r["job"], "kind": r["kind"], "turn": r["turn"], "outcome": r["outcome"],
                        "t_candidate": r["t_candidate"], "reward": r["reward"], "predicted": r["predicted"],
                        "result": r["result"]})
        return {"session": sid, "records": out}

    @app.get("/v1/sessions/{sid}/best")
    async def best(sid: str, authorization: str = Auth):
        s = owned(sid, client_of(authorization))
        kind = "env" if s["mode"] == "skill" else "submit"  # an LLM session's best is among its submissions
        recs = [r for r in svc.store.records(sid)
                if r["kind"] == kind and r["outcome"] == "ok" and r["t_candidate"] is not None]
        if not recs:
            return {"session": sid, "best": None,
                    "note": "no correct candidate with a time yet" + ("" if svc.device == "cuda" else
                                                                   " (without a GPU a ModelNew is never verified)")}
        b = min(recs, key=lambda r: (r["t_candidate"], -r["seq"]))
        row = svc.store._one("SELECT program FROM records WHERE seq=?", (b["seq"],))
        program = row["program"]
        kind = "schedule" if b["kind"] == "env" else "model_new"
        return {"session": sid, "best": {"kind": kind, "program": json.loads(program) if kind == "schedule" else program,
                                         "t_candidate": b["t_candidate"], "reward": b["reward"],
                                         "predicted": b["predicted"], "job": b["job"], "turn": b["turn"]}}

    @app.get("/v1/jobs/{jid}")
    async def get_job(jid: str, wait: float = Wait, authorization: str = Auth):
        client = client_of(authorization)
        job = svc.store.job(jid)
        if job is None or job["client"] != client:
            raise ApiError(404, "no job %s for this client" % jid)
        return await answer(job, wait)

    return app


def resolve_task(cfg, t):
    """The problem file of a task spec; a 400 that says what to fix when there is none."""
    if t.kind == "kernelbench":
        rel = Path(t.problem)
        if rel.is_absolute() or ".." in rel.parts or rel.suffix != ".py":
            raise bad_input("task.problem must be a relative .py path under a problem root, e.g. level1/19_ReLU.py")
        for root in cfg.problem_roots:
            f = Path(root) / rel
            if f.is_file():
                return str(f.resolve())
        raise bad_input("no problem %s under the server's problem roots (%s)" % (t.problem, ", ".join(
            Path(r).name for r in cfg.problem_roots) or "none: start the server with --problems DIR"))
    if t.kind == "file":
        if "class Model" not in t.code or "def get_inputs" not in t.code:
            raise bad_input("task.code must be a KernelBench-format problem: class Model, get_inputs(), "
                            "get_init_inputs()")
        d = Path(cfg.work_dir) / "problems"
        d.mkdir(parents=True, exist_ok=True)
        f = d / ("%s_%s.py" % (t.name, hashlib.sha256(t.code.encode()).hexdigest()[:12]))
        if not f.exists():
            f.write_text(t.code)
        return str(f)
    if t.kind == "dataset":
        root = cfg.datasets.get(t.dataset)
        if root is None:
            raise bad_input("no dataset %r; the server has: %s" % (t.dataset, ", ".join(sorted(cfg.datasets)) or
                                                                   "none (start it with --dataset NAME=DIR)"))
        rows = [l for l in (Path(root) / "index.jsonl").read_text().splitlines() if l.strip()]
        if t.row >= len(rows):
            raise bad_input("dataset %s has rows 0..%d; task.row %d is past its end" % (t.dataset, len(rows) - 1, t.row))
        return str(Path(root) / json.loads(rows[t.row])["file"])
    raise bad_input("unknown task kind")
