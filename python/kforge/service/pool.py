"""The Ray pool: CPU build actors and one evaluation actor per GPU (placed by Ray's `GPU` resource), each
fed from a bounded queue of its pool by one dispatch loop per actor.

A worker that dies (its process killed, its node lost) loses no job: the job goes back to the front of
its queue and runs on another worker, at most `max_attempts` times in all, then it is answered as a
fault. The dead actor is replaced by a fresh one. Jobs for the GPU pool are first built on a CPU actor
(nvcc into the shared build cache), so that a GPU spends its time evaluating.
"""

import asyncio
import collections
import math
import os
import time

import ray
from ray.exceptions import RayActorError, RayTaskError

try:  # ray >= 2.x names; older releases raise RayActorError only
    from ray.exceptions import WorkerCrashedError
except ImportError:  # pragma: no cover
    WorkerCrashedError = RayActorError

from kforge.service.jobs import run_job


@ray.remote(max_restarts=0, max_task_retries=0)
class Worker:
    """One worker process: runs jobs one at a time, each in a child process (jobs.py)."""

    def __init__(self, cfg):
        self.cfg = cfg
        os.makedirs(cfg["work_dir"], exist_ok=True)

    def pid(self):
        return os.getpid()

    def node(self):
        return ray.get_runtime_context().get_node_id()

    def run(self, job):
        return run_job(self.cfg, job)


class Slot:
    def __init__(self, index):
        self.index = index
        self.actor = None
        self.pid = None
        self.worker_id = None
        self.current = None  # the job id it runs now
        self.started = None


class Pool:
    """One kind of worker (`build`: num_cpus=1 each; `gpu`: num_gpus=1 each) and its bounded queue."""

    def __init__(self, name, cfg, store, resources, queue_limit, max_attempts, on_result, metrics):
        self.name = name
        self.cfg = cfg  # the workers' configuration (picklable: it travels to the actors)
        self.store = store
        self.resources = resources
        self.queue_limit = queue_limit
        self.max_attempts = max_attempts
        self.on_result = on_result
        self.metrics = metrics
        self.queue = collections.deque()
        self.ready = asyncio.Condition()
        self.slots = []
        self.tasks = []
        self.handoff = None  # build pool: where jobs built for the GPU go next
        self.inbound = 0  # jobs on their way here (being built on the CPU pool first)
        self.durations = collections.deque(maxlen=200)
        self.generation = 0

    def size(self):
        return len(self.slots)

    def waiting(self):
        return len(self.queue) + self.inbound

    def full(self):
        return self.waiting() >= self.queue_limit

    def retry_after(self):
        mean = sum(self.durations) / len(self.durations) if self.durations else 1.0
        workers = max(1, len(self.slots))
        return int(min(60, max(1, math.ceil((self.waiting() + 1) * mean / workers))))

    async def _spawn(self, slot):
        self.generation += 1
        opts = dict(self.resources)
        slot.actor = Worker.options(**opts).remote(self.cfg)
        slot.pid = await slot.actor.pid.remote()
        slot.worker_id = "%s-%d.%d@%d" % (self.name, slot.index, self.generation, slot.pid)

    async def add_workers(self, n):
        for _ in range(n):
            slot = Slot(len(self.slots))
            await self._spawn(slot)
            self.slots.append(slot)
            self.tasks.append(asyncio.create_task(self._loop(slot)))

    async def push(self, job, front=False):
        async with self.ready:
            (self.queue.appendleft if front else self.queue.append)(job)
            self.ready.notify()

    async def _take(self):
        async with self.ready:
            while not self.queue:
                await self.ready.wait()
            return self.queue.popleft()

    async def _loop(self, slot):
        while True:
            job = await self._take()
            try:
                await self._run_one(slot, job)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a bug here must not stop the loop; the job is answered as a fault
                await self.on_result(job, {"status": "fault", "message": "service error: %s" % type(e).__name__})

    async def _run_one(self, slot, job):
        store = self.store
        prebuild = job.pop("_prebuild", False)
        if not prebuild:
            attempt = store.start(job["id"], slot.worker_id)
            if attempt == 0:
                return  # answered already (a duplicate in the queue after a restart)
        slot.current, slot.started = job["id"], time.time()
        t0 = time.time()
        try:
            if prebuild:
                build = {"id": job["id"], "kind": "build", "payload": dict(job["payload"])}
                await slot.actor.run.remote(build)
                self.handoff.inbound -= 1
                await self.handoff.push(job)
                return
            result = await slot.actor.run.remote(job)
        except (RayActorError, WorkerCrashedError):
            self.metrics["worker_deaths"] += 1
            dead = slot.worker_id
            slot.current = None
            await self._spawn(slot)
            if prebuild:
                self.handoff.inbound -= 1
                await self.handoff.push(job)  # the GPU worker builds it itself
                return
            if attempt >= self.max_attempts:
                result = {"status": "fault",
                          "message": "the worker died %d times running this job (last: %s); not retried again"
                                     % (attempt, dead)}
            else:
                self.metrics["retries"] += 1
                store.requeue(job["id"])
                await self.push(job, front=True)
                return
        except RayTaskError as e:
            cause = str(getattr(e, "cause", e)).strip().splitlines()
            result = {"status": "fault", "message": "the worker failed: %s" % (cause[-1] if cause else "unknown")}
        finally:
            slot.current = None
        self.durations.append(time.time() - t0)
        await self.on_result(job, result)

    def describe(self):
        return [{"worker": s.worker_id, "pid": s.pid, "job": s.current} for s in self.slots]

    async def stop(self):
        for t in self.tasks:
            t.cancel()
        for s in self.slots:
            try:
                ray.kill(s.actor)
            except Exception:
                pass
