"""Fixtures of the service tests: a `kforge serve` process on loopback (started as the README says), killed
or stopped by its process group (its embedded Ray goes with it)."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

try:
    import httpx
except ImportError:  # the test modules skip (needs_service)
    httpx = None


def needs_service():
    """At the top of each test module: skip where python/requirements/service.txt is not installed, except under
    ctest (KFORGE_REQUIRE_PYTHON_DEPS=1), where setup.sh installed it and a missing package is a failure."""
    import importlib.util
    missing = [m for m in ("httpx", "ray", "fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if not missing:
        return
    why = f"python/requirements/service.txt is not installed ({', '.join(missing)} missing; run scripts/setup.sh)"
    if os.environ.get("KFORGE_REQUIRE_PYTHON_DEPS") == "1":
        pytest.fail(why, pytrace=False)
    pytest.skip(why, allow_module_level=True)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (run on the GPU machine)")

KFORGE = os.environ.get("KFORGE_BIN") or str(REPO / "build" / "kforge")
PROBLEM = "relu_tanh.py"  # tests/problems/relu_tanh.py, a default problem root


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, work, args, tokens):
        self.work, self.args, self.tokens = Path(work), list(args), tokens
        self.port = free_port()
        self.proc = None
        self.log = self.work / "server.log"

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, timeout=120):
        self.work.mkdir(parents=True, exist_ok=True)
        argv = [KFORGE, "serve", "--port", str(self.port), "--work-dir", str(self.work)] + self.args
        for t, c in self.tokens.items():
            argv += ["--token", "%s=%s" % (t, c)]
        env = dict(os.environ, RAY_DISABLE_USAGE_STATS="1", RAY_USAGE_STATS_ENABLED="0")
        self.proc = subprocess.Popen(argv, stdout=open(self.log, "a"), stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("kforge serve exited %s:\n%s" % (self.proc.returncode, self.log.read_text()[-3000:]))
            try:
                if httpx.get(self.url + "/v1/health", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        self.kill()
        raise RuntimeError("kforge serve did not answer in %d s:\n%s" % (timeout, self.log.read_text()[-3000:]))

    def kill(self):
        """SIGKILL to the server's process group: the server and its embedded Ray die at once."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._reap()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def _reap(self):
        # Ray processes that left the group (none expected) would show here; kill what is still in it.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, TypeError):
            pass


@pytest.fixture(scope="session")
def kforge_bin():
    if not os.access(KFORGE, os.X_OK):
        pytest.skip("no kforge binary at %s (build it, or set KFORGE_BIN)" % KFORGE)
    return KFORGE


def headers(token):
    return {"Authorization": "Bearer " + token}


def wait_job(url, token, job, timeout=120):
    deadline = time.time() + timeout
    while job["state"] != "done":
        assert time.time() < deadline, "job %s not done in %d s" % (job["job"], timeout)
        job = httpx.get(url + "/v1/jobs/" + job["job"], params={"wait": 20}, headers=headers(token), timeout=60).json()
    return job
