"""The C++ core as Python sees it: the `kforge` executable, found and run as a subprocess.

Python talks to the core through its command line and JSON reports (the same contract the tests and the
agent use), never through a binding: untrusted generated code and nvcc stay in other processes, and the
core is not tied to the ABI of the torch that happens to be imported (docs/python-package.md says why).
"""
import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass

_HERE = os.path.dirname(os.path.abspath(__file__))


class CoreNotFound(RuntimeError):
    """No kforge executable: neither installed with the package, nor built in the source tree, nor on PATH."""


def executable():
    """$KFORGE_BIN, then the one installed inside the package (pip install .), then the source tree's
    build/kforge (scripts/setup.sh), then `kforge` on PATH when it is not this package's Python script."""
    env = os.environ.get("KFORGE_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise CoreNotFound(f"KFORGE_BIN={env} is not an executable file")
        return env
    candidates = [os.path.join(_HERE, "_core", "bin", "kforge"),
                  os.path.join(_HERE, "..", "..", "build", "kforge")]
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    on_path = shutil.which("kforge")
    if on_path and not _is_python_script(on_path):
        return on_path
    raise CoreNotFound("the kforge executable was not found: run scripts/setup.sh (builds build/kforge), "
                       "`pip install .`, or set KFORGE_BIN to the executable")


def _is_python_script(path):
    try:
        with open(path, "rb") as f:
            return b"python" in f.readline()
    except OSError:
        return False


@dataclass
class CoreResult:
    argv: list
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self):
        return self.returncode == 0

    def json(self):
        return json.loads(self.stdout)

    def message(self):
        """The core's own words for a failure: its last non-empty stderr lines."""
        lines = [ln for ln in (self.stderr or self.stdout).splitlines() if ln.strip()]
        return " / ".join(lines[-3:]) if lines else f"exit status {self.returncode}"


CALLS = []  # every CoreResult of this process, in order: tests count builds with it


def run(args, timeout=1800, env=None):
    """Run `kforge ARGS...`; a failure is a CoreResult with its status, never an exception."""
    import time

    argv = [executable()] + [str(a) for a in args]
    full_env = dict(os.environ)
    full_env.update(env or {})
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=full_env)
        r = CoreResult(argv, p.returncode, p.stdout, p.stderr, time.monotonic() - t0)
    except subprocess.TimeoutExpired as e:
        r = CoreResult(argv, 124, e.stdout or "", f"timed out after {timeout} s", time.monotonic() - t0)
    CALLS.append(r)
    return r


@functools.lru_cache(maxsize=None)
def version():
    """`kforge --version` ("kforge 0.1.0"), or "kforge (not found)"; asked once per process."""
    try:
        r = run(["--version"], timeout=60)
    except CoreNotFound:
        return "kforge (not found)"
    finally:
        if CALLS and CALLS[-1].argv[1:] == ["--version"]:
            CALLS.pop()
    return r.stdout.strip() or "kforge (unknown)"
