"""The server's core, apart from HTTP: the Ray pools, job submission with back-pressure and quotas, and what a
finished job changes in its session (written once, in the store's transaction)."""

import asyncio
import json
import logging
import time
from pathlib import Path

import ray

from kforge.service.limits import Metrics
from kforge.service.pool import Pool
from kforge.service.store import Store, add_record

log = logging.getLogger("kforge.service")


class ApiError(Exception):
    def __init__(self, status, message, headers=None):
        self.status, self.message, self.headers = status, message, headers or {}


def bad_input(message):
    return ApiError(400, message)


class Service:
    """The server's state: configuration, store, pools, waiters, metrics."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.store = Store(cfg.db)
        self.metrics = Metrics()
        self.waiters = {}
        self.pools = {}
        self.device = "cpu"

    # Lifecycle.
    async def start(self):
        if self.cfg.address:
            ray.init(address=self.cfg.address, log_to_driver=False, configure_logging=False)
        else:
            # Results are small JSON: a small object store (Ray's default takes 30 % of memory).
            ray.init(num_cpus=self.cfg.build_workers, num_gpus=self.cfg.gpus, include_dashboard=False,
                     log_to_driver=False, configure_logging=False, object_store_memory=256 << 20)
        wcfg = {"kforge_bin": self.cfg.kforge_bin, "python": self.cfg.python, "python_path": self.cfg.python_path,
                "work_dir": str(Path(self.cfg.work_dir) / "jobs"), "job_timeout_s": self.cfg.job_timeout_s,
                "allow_test_delay": self.cfg.allow_test_delay}
        mk = lambda name, res: Pool(name, wcfg, self.store, res, self.cfg.queue_limit, self.cfg.max_attempts,
                                    self.on_result, self.metrics.counters)
        self.pools["build"] = mk("build", {"num_cpus": 1})
        self.pools["gpu"] = mk("gpu", {"num_gpus": 1, "num_cpus": 0})
        self.pools["build"].handoff = self.pools["gpu"]
        await self.pools["build"].add_workers(self.cfg.build_workers)
        await self.scale_gpus()
        self.scaler = asyncio.create_task(self._rescan())
        for job in self.store.unfinished():  # queued or running when the server stopped: run them again
            self.metrics.counters["recovered"] += 1
            await self._enqueue(job)

    async def scale_gpus(self):
        gpus = int(ray.cluster_resources().get("GPU", 0))
        pool = self.pools["gpu"]
        if gpus > pool.size():
            await pool.add_workers(gpus - pool.size())
        self.device = "cuda" if pool.size() > 0 else "cpu"

    async def _rescan(self):
        while True:  # GPUs that join the cluster get their evaluation actor (no code change, no restart)
            await asyncio.sleep(30)
            try:
                await self.scale_gpus()
            except Exception:
                log.warning("GPU rescan failed", exc_info=False)

    async def stop(self):
        self.scaler.cancel()
        for p in self.pools.values():
            await p.stop()
        ray.shutdown()
        self.store.close()

    # Jobs.
    def pool_for(self, kind):
        if kind in ("env", "submit") and self.device == "cuda":
            return "gpu"
        return "build"

    async def submit(self, client, session, kind, payload, idem_key, new_session=None):
        pool = self.pools[self.pool_for(kind)]
        quota = self.cfg.quota(client)
        if idem_key is None or self.store_idem(client, idem_key) is None:
            if pool.full():
                self.metrics.counters["rejected_queue_full"] += 1
                raise ApiError(429, "the %s queue is full (%d jobs waiting); retry after the Retry-After seconds"
                               % (pool.name, pool.waiting()), {"Retry-After": str(pool.retry_after())})
            if self.store.pending_of(client) >= quota["max_pending"]:
                self.metrics.counters["rejected_quota"] += 1
                raise ApiError(429, "client %s has %d unfinished jobs, its quota; wait for one to finish"
                               % (client, quota["max_pending"]), {"Retry-After": str(pool.retry_after())})
        job, created = self.store.submit(client, session, kind, pool.name, payload, idem_key, new_session)
        if job is None:
            raise ApiError(409, "this session has a job in progress (%s); wait for it (GET /v1/jobs/ID) and "
                                "send the next request then" % self.store.session(session)["pending_job"])
        if created:
            self.metrics.counters["jobs_submitted"] += 1
            await self._enqueue(self.store.job(job["id"]))
        return self.store.job(job["id"])

    def store_idem(self, client, key):
        return self.store._one("SELECT id FROM jobs WHERE client=? AND idem_key=?", (client, key))

    async def _enqueue(self, job):
        q = {"id": job["id"], "kind": job["kind"], "payload": job["payload"]}
        target = self.pools[job["pool"]] if self.pools[job["pool"]].size() else self.pools["build"]
        if target.name == "gpu" and job["kind"] == "env" and self.pools["build"].size():
            target.inbound += 1
            q["_prebuild"] = True
            await self.pools["build"].push(q)
        else:
            await target.push(q)

    async def on_result(self, job, result):
        full = self.store.job(job["id"])
        if full is None:
            return
        follow = []
        wrote = self.store.finish(job["id"], result, lambda db, j: self.apply(db, j, result, follow))
        if not wrote:
            self.metrics.counters["duplicate_results_dropped"] += 1
            return
        self.metrics.counters["jobs_done"] += 1
        if result.get("status") == "fault":
            self.metrics.counters["jobs_fault"] += 1
        self.metrics.observe(time.time() - full["created"])
        for jid in follow:
            await self._enqueue(self.store.job(jid))
        ev = self.waiters.pop(job["id"], None)
        if ev:
            ev.set()

    def apply(self, db, job, result, follow):
        """The session's change of a finished job (inside the store's transaction)."""
        sid = job["session"]
        if not sid or result.get("status") != "ok":
            return
        p = job["payload"]
        if job["kind"] == "env":
            obs = result["observation"]
            db.execute("UPDATE sessions SET actions=?, observation=? WHERE id=?",
                       (json.dumps(p.get("actions", [])), json.dumps(obs), sid))
            if "evlog" in result:
                db.execute("UPDATE sessions SET evlog=? WHERE id=?", (result["evlog"], sid))
            if not p.get("last_edit"):
                program = json.dumps(obs.get("schedule"))
                add_record(db, sid, job["id"], "env", obs.get("turn"), obs["last"], program)
        elif job["kind"] == "submit":
            db.execute("UPDATE sessions SET candidate=? WHERE id=?", (p["candidate"], sid))
            add_record(db, sid, job["id"], "submit", None, result, p["candidate"])
        elif job["kind"] == "synth":
            db.execute("UPDATE sessions SET problem=? WHERE id=?", (result["problem"], sid))
            s = db.execute("SELECT * FROM sessions WHERE id=?", (sid,)).fetchone()
            payload = {"problem": result["problem"], "protocol": s["protocol"], "device": self.device,
                       "actions": [], "max_turns": p.get("max_turns", 150)}
            jid = "%s-reset" % job["id"]
            db.execute("INSERT INTO jobs(id, client, session, kind, pool, payload, state, created) "
                       "VALUES (?,?,?,?,?,?,?,?)", (jid, job["client"], sid, "env", self.pool_for("env"),
                                                    json.dumps(payload), "queued", time.time()))
            db.execute("UPDATE sessions SET pending_job=? WHERE id=?", (jid, sid))
            result["next_job"] = jid
            db.execute("UPDATE jobs SET result=? WHERE id=?", (json.dumps(result), job["id"]))
            follow.append(jid)

    async def wait(self, jid, seconds):
        job = self.store.job(jid)
        if job and job["state"] != "done" and seconds > 0:
            ev = self.waiters.setdefault(jid, asyncio.Event())
            try:
                await asyncio.wait_for(ev.wait(), timeout=seconds)
            except asyncio.TimeoutError:
                pass
            job = self.store.job(jid)
        return job
