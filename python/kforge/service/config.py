"""kforge serve's configuration: the command line (python -m kforge.service / kforge serve) to a Config."""

import argparse
import json
import os
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


@dataclass
class Config:
    host: str = "127.0.0.1"
    port: int = 8765
    address: str = ""  # a Ray cluster to join; empty: start an embedded Ray instance
    work_dir: str = ""
    db: str = ""
    kforge_bin: str = ""
    python: str = sys.executable
    python_path: str = str(REPO / "python")
    build_workers: int = 2
    gpus: int = None  # embedded Ray: GPUs to offer (None: what Ray detects)
    queue_limit: int = 256
    max_attempts: int = 3
    max_body_bytes: int = 1 << 20
    max_wait_s: float = 120
    job_timeout_s: float = 600
    allow_test_delay: bool = False
    tokens: dict = field(default_factory=dict)  # token -> client
    quotas: dict = field(default_factory=dict)  # client -> {"max_sessions", "max_pending"}
    default_quota: dict = field(default_factory=lambda: {"max_sessions": 1024, "max_pending": 256})
    problem_roots: list = field(default_factory=list)
    datasets: dict = field(default_factory=dict)

    def quota(self, client):
        return {**self.default_quota, **self.quotas.get(client, {})}


def parse(argv=None):
    ap = argparse.ArgumentParser(
        prog="kforge serve",
        description="kforge's environment as an HTTP/JSON service (OpenAPI at /openapi.json) over a Ray pool: "
                    "CPU build workers and one evaluation worker per GPU. docs/service.md.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--address", default="", help="join this Ray cluster (ray://HOST:PORT or HOST:PORT; default: "
                                                  "an embedded Ray instance on this machine)")
    ap.add_argument("--work-dir", default="", help="jobs, uploaded problems, synthesized tasks, the database "
                                                   "(default: $KFORGE_CACHE/serve or ~/.cache/kforge/serve)")
    ap.add_argument("--db", default="", help="the SQLite database of sessions, jobs and records (default: in --work-dir)")
    ap.add_argument("--token", action="append", default=[], metavar="TOKEN[=CLIENT]",
                    help="a bearer token (repeatable); CLIENT names it for quotas (default: client-N)")
    ap.add_argument("--tokens-file", help='JSON {"TOKEN": {"client": NAME, "max_sessions": N, "max_pending": M}}')
    ap.add_argument("--build-workers", type=int, default=os.cpu_count() or 1, help="CPU build actors (default: cores)")
    ap.add_argument("--gpus", type=int, default=None, help="embedded Ray: GPUs to use (default: all it detects)")
    ap.add_argument("--queue-limit", type=int, default=256, help="jobs waiting per pool before 429")
    ap.add_argument("--max-attempts", type=int, default=3, help="runs of a job whose worker died, then a fault")
    ap.add_argument("--max-body-bytes", type=int, default=1 << 20)
    ap.add_argument("--max-sessions", type=int, default=1024, help="open sessions per client (default quota)")
    ap.add_argument("--max-pending", type=int, default=256, help="unfinished jobs per client (default quota)")
    ap.add_argument("--job-timeout", type=float, default=600, help="seconds a job may run")
    ap.add_argument("--problems", action="append", default=[], metavar="DIR",
                    help="a problem root for tasks of kind kernelbench (repeatable; default: tests/problems and "
                         "../shared/kernelbench where present)")
    ap.add_argument("--dataset", action="append", default=[], metavar="NAME=DIR",
                    help="a `kforge synth` dataset for tasks of kind dataset (repeatable)")
    ap.add_argument("--allow-test-delay", action="store_true",
                    help="honour the X-Test-Delay header (fault-injection tests; never in production)")
    ap.add_argument("--log-level", default="warning")
    a = ap.parse_args(argv)

    def fail(msg):
        ap.error(msg)

    cache = Path(os.environ.get("KFORGE_CACHE") or Path.home() / ".cache" / "kforge")
    work = Path(a.work_dir or cache / "serve").resolve()
    work.mkdir(parents=True, exist_ok=True)
    cfg = Config(host=a.host, port=a.port, address=a.address, work_dir=str(work),
                 db=a.db or str(work / "service.sqlite"), build_workers=max(1, a.build_workers), gpus=a.gpus,
                 queue_limit=max(1, a.queue_limit), max_attempts=max(1, a.max_attempts),
                 max_body_bytes=a.max_body_bytes, job_timeout_s=a.job_timeout, allow_test_delay=a.allow_test_delay)
    cfg.default_quota = {"max_sessions": a.max_sessions, "max_pending": a.max_pending}
    cfg.kforge_bin = os.environ.get("KFORGE_BIN") or str(REPO / "build" / "kforge")
    if not os.access(cfg.kforge_bin, os.X_OK):
        fail("no kforge binary at %s: build it (cmake --build build --target kforge) or set KFORGE_BIN" % cfg.kforge_bin)
    for i, t in enumerate(a.token):
        token, _, client = t.partition("=")
        cfg.tokens[token] = client or "client-%d" % (i + 1)
    if a.tokens_file:
        try:
            spec = json.loads(Path(a.tokens_file).read_text())
        except (OSError, ValueError) as e:
            fail("--tokens-file %s: %s" % (a.tokens_file, e))
        for token, v in spec.items():
            cfg.tokens[token] = v["client"]
            cfg.quotas[v["client"]] = {k: v[k] for k in ("max_sessions", "max_pending") if k in v}
    if not cfg.tokens:
        token = secrets.token_urlsafe(24)
        cfg.tokens[token] = "local"
        f = work / "token"
        f.write_text(token + "\n")
        f.chmod(0o600)
        print("kforge serve: no --token given; made one for client 'local' in %s" % f, file=sys.stderr)
    roots = a.problems or [str(REPO / "tests" / "problems"), str(REPO.parent / "shared" / "kernelbench")]
    cfg.problem_roots = [r for r in roots if Path(r).is_dir()]
    for d in a.dataset:
        name, _, path = d.partition("=")
        if not path or not (Path(path) / "index.jsonl").is_file():
            fail("--dataset %s: give NAME=DIR where DIR is a `kforge synth` dataset (has index.jsonl)" % d)
        cfg.datasets[name] = str(Path(path).resolve())
    return cfg, a
