"""`python -m kforge ARGS` and the `kforge` command of the installed package: the C++ core's command line
(python/kforge/core.py finds the executable), with its exit status."""
import os
import sys

from . import core


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        exe = core.executable()
    except core.CoreNotFound as e:
        print(f"kforge: error: {e}", file=sys.stderr)
        return 127
    sys.stdout.flush()
    os.execv(exe, [exe] + args)  # the core replaces this process: signals, exit status and streams are its own


if __name__ == "__main__":
    sys.exit(main())
