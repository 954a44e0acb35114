# kforge import server: torch imported once, one forked child per problem (issue #22 item 5, build time).
"""Usage: python3 -m kforge.import_server   (spoken to by kforge in lines; not for people)

`python3 -m kforge.importer` pays PyTorch's import (2-3 s on a fast machine, 8 s on a busy 2-core one)
before it traces anything, once per problem. A `kforge bench`, `train` or `synth` run imports hundreds of
problems, so kforge keeps this server instead: it imports torch and the importer once, then answers each
request line by forking a child that runs the importer's `main` on that request's arguments. The child is
a fresh copy of the server (the problem's module, its globals and whatever it changes in torch die with
it), exactly as isolated from the next problem as a new process would be. The server itself runs no
tensor code, so no thread pool or device is live when it forks.

Request (one JSON line): {"argv": [importer arguments], "log": "FILE"}: the child's stdout and stderr go
to FILE. Answer (one JSON line): {"exit": N} with the importer's exit status, or {"signal": N} if the
child was killed by a signal. The parent (src/sandbox/python.cpp) reads FILE and treats both exactly as
it treats the one-shot importer's.
"""
import json
import os
import sys

import torch  # noqa: F401  (the point of the server: imported once, inherited by every child)
# What torch imports lazily on a trace's first meta kernel (torch._disable_dynamo pulls in dynamo) and on the
# first ATen capture (refs, prims, decompositions): about 1 s on a fast machine that every child paid again.
# Importing them starts no thread, so the server still forks with none. A torch without one of them (an old
# release) is served all the same: the preload only saves time.
for _lazy in ("torch._decomp", "torch._dynamo", "torch._prims", "torch._refs"):
    try:
        __import__(_lazy)
    except ImportError:
        pass

from . import importer


def _run_child(argv, log):
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    # The Python streams too, whatever they were in the server (a test's capture, say), now write to FILE.
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    sys.stdin = open(os.devnull)
    code = 1
    try:
        sys.argv = ["kforge.importer"] + argv
        code = importer.main(argv)
    except SystemExit as e:  # argparse errors
        code = e.code if isinstance(e.code, int) else 2
    except BaseException:  # noqa: BLE001  (the one-shot importer would print it and exit 1)
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code or 0)


def serve(lines, answer):
    for line in lines:
        if not line.strip():
            continue
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_child(list(request["argv"]), request["log"])
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            answer({"signal": os.WTERMSIG(status)})
        else:
            answer({"exit": os.WEXITSTATUS(status)})


def main():
    out = sys.stdout

    def answer(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    serve(sys.stdin, answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
