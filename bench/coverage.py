#!/usr/bin/env python3
"""Coverage runner: how far kforge gets on folders of KernelBench-format problem files.

For every ``*.py`` problem in the given folders (not recursive; README and ``__init__.py``
are ignored) it runs ``kforge import FILE -o WORK/...json`` and, with ``--build``, then
``kforge build FILE --out WORK/...`` -- each file under one time budget (``--timeout``,
shared by its import and build), ``-j N`` files at a time. Progress goes to stderr; the
table (file, stage reached, ok or the first line of the error) and a per-folder summary go
to stdout; ``--json FILE`` gets every row.

Files named ``zz_einops_*`` are skipped when ``einops`` is not importable, and ``tv_*`` files
when ``torchvision`` is not importable, in the python kforge would use (``--python``, default
``$KFORGE_PYTHON``, else the first python3 on PATH that has torch, else /usr/bin/python3).
They are reported as skipped, never as passed.

Exit status: 0 whatever the problems did; 2 when this script's own arguments are bad.

Standard library only. Example:

    python3 bench/coverage.py tests/unseen tests/zoo --build -j 8 --json /tmp/coverage.json
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (file-name prefix, python module the file needs)
OPTIONAL_DEPS = (("zz_einops_", "einops"), ("tv_", "torchvision"))


def die(msg):
    sys.stderr.write("coverage.py: error: %s\n" % msg)
    sys.exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Run `kforge import` (and with --build, `kforge build`) on every problem file "
        "of the given folders and report how far each got.")
    p.add_argument("folders", nargs="+", metavar="FOLDER",
                   help="folders of KernelBench-format problem files (a single .py file is accepted too)")
    p.add_argument("--kforge", default="build/kforge",
                   help="the kforge binary (default: build/kforge, relative to the current directory, "
                   "else to the repository root)")
    p.add_argument("--build", action="store_true", help="also run `kforge build FILE --out DIR` after a successful import")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds allowed per file, import and build together (default 300)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="files processed in parallel (default 1)")
    p.add_argument("--nvcc-jobs", type=int, default=None,
                   help="passed to `kforge build -j` (default: kforge's own default, all cores)")
    p.add_argument("--protocol", choices=("cuda-agent", "kernelbench"), default=None,
                   help="passed to kforge as --protocol (default: kforge's default)")
    p.add_argument("--python", default=None,
                   help="the python used to decide whether einops/torchvision are importable "
                   "(default: $KFORGE_PYTHON, else the first python3 on PATH with torch, else /usr/bin/python3)")
    p.add_argument("--json", dest="json_out", default=None, metavar="FILE", help="write every row here as JSON")
    p.add_argument("--work", default=None, metavar="DIR",
                   help="where graphs and builds go (default: a fresh temporary folder, removed at the end)")
    p.add_argument("--keep", action="store_true", help="keep the work folder (its path is printed)")
    args = p.parse_args(argv)

    if args.timeout <= 0:
        die("--timeout must be positive (got %g)" % args.timeout)
    if args.jobs < 1:
        die("-j/--jobs must be at least 1 (got %d)" % args.jobs)
    if args.nvcc_jobs is not None and args.nvcc_jobs < 0:
        die("--nvcc-jobs must be 0 or more (got %d)" % args.nvcc_jobs)

    kf = args.kforge
    candidates = [kf] if os.path.isabs(kf) else [os.path.abspath(kf), os.path.join(REPO_ROOT, kf)]
    found = None
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            found = c
            break
    if found is None:
        if shutil.which(kf):
            found = shutil.which(kf)
        else:
            die("kforge binary not found or not executable: %s (looked at %s); build it first "
                "(cmake --build build) or pass --kforge PATH" % (kf, ", ".join(candidates)))
    args.kforge = found

    for f in args.folders:
        if os.path.isdir(f):
            continue
        if os.path.isfile(f) and f.endswith(".py"):
            continue
        die("not a folder (nor a .py problem file): %s" % f)
    if args.json_out:
        parent = os.path.dirname(os.path.abspath(args.json_out))
        if not os.path.isdir(parent):
            die("folder of --json does not exist: %s" % parent)
    if args.work and os.path.exists(args.work) and not os.path.isdir(args.work):
        die("--work exists and is not a folder: %s" % args.work)
    return args


def find_python(explicit):
    if explicit:
        return explicit
    env = os.environ.get("KFORGE_PYTHON")
    if env:
        return env
    seen = set()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = os.path.join(d, "python3")
        real = os.path.realpath(cand)
        if real in seen or not (os.path.isfile(cand) and os.access(cand, os.X_OK)):
            continue
        seen.add(real)
        if importable(cand, "torch"):
            return cand
    return "/usr/bin/python3"


def importable(python, module):
    try:
        r = subprocess.run([python, "-c", "import %s" % module], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def collect(folders):
    """[(folder label, absolute path)] in a stable order."""
    out = []
    for f in folders:
        if os.path.isfile(f):
            out.append((os.path.basename(os.path.dirname(os.path.abspath(f))) or ".", os.path.abspath(f)))
            continue
        label = os.path.basename(os.path.normpath(os.path.abspath(f)))
        for name in sorted(os.listdir(f)):
            path = os.path.join(f, name)
            if not name.endswith(".py") or name == "__init__.py" or name.startswith("."):
                continue
            if os.path.isfile(path):
                out.append((label, os.path.abspath(path)))
    return out


def run_cmd(cmd, timeout):
    """(returncode or None on timeout, stdout, stderr, seconds). Kills the whole process group on timeout."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=REPO_ROOT)
    except OSError as e:
        return 127, "", "cannot run %s: %s" % (cmd[0], e), 0.0
    try:
        out, err = proc.communicate(timeout=max(timeout, 0.001))
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = proc.communicate()
        rc = None
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.monotonic() - t0


def first_error_line(rc, out, err):
    lines_err = [l.strip() for l in err.splitlines() if l.strip()]
    lines_out = [l.strip() for l in out.splitlines() if l.strip()]
    for lines in (lines_err, lines_out):
        for l in lines:
            if "error" in l.lower() or "failed" in l.lower() or "traceback" in l.lower():
                return l
    if lines_err:
        return lines_err[0]
    if lines_out:
        return lines_out[-1]
    return "exit status %s" % rc


def process(index, folder, path, args, work, skips):
    name = os.path.basename(path)
    row = {
        "folder": folder, "file": name, "path": path, "stage": "import", "status": "ok", "error": None,
        "import_rc": None, "import_s": None, "build_rc": None, "build_s": None,
    }
    for prefix, module in OPTIONAL_DEPS:
        if name.startswith(prefix) and not skips.get(module, True):
            row.update(stage="-", status="skipped", error="%s is not importable" % module)
            return row
    stem = "%04d_%s" % (index, name[:-3])
    extra = ["--protocol", args.protocol] if args.protocol else []
    deadline = time.monotonic() + args.timeout

    graph = os.path.join(work, stem + ".json")
    rc, out, err, secs = run_cmd([args.kforge, "import", path, "-o", graph] + extra, args.timeout)
    row["import_rc"], row["import_s"] = rc, round(secs, 2)
    if rc is None:
        row.update(status="timeout", error="import timed out after %g s" % args.timeout)
        return row
    if rc != 0:
        row.update(status="fail", error=first_error_line(rc, out, err))
        return row
    if not args.build:
        return row

    row["stage"] = "build"
    left = deadline - time.monotonic()
    if left <= 0:
        row.update(status="timeout", error="no time left for build (timeout %g s per file)" % args.timeout)
        return row
    outdir = os.path.join(work, stem + "_build")
    cmd = [args.kforge, "build", path, "--out", outdir] + extra
    if args.nvcc_jobs is not None:
        cmd += ["-j", str(args.nvcc_jobs)]
    rc, out, err, secs = run_cmd(cmd, left)
    row["build_rc"], row["build_s"] = rc, round(secs, 2)
    if rc is None:
        row.update(status="timeout", error="build timed out (timeout %g s per file)" % args.timeout)
    elif rc != 0:
        row.update(status="fail", error=first_error_line(rc, out, err))
    return row


def print_table(rows, build):
    headers = ("file", "stage", "result")
    body = []
    for r in rows:
        if r["status"] == "ok":
            result = "ok"
        elif r["status"] == "skipped":
            result = "skipped: " + r["error"]
        elif r["status"] == "timeout":
            result = "TIMEOUT: " + r["error"]
        else:
            result = "FAIL: " + (r["error"] or "")
        if len(result) > 160:
            result = result[:157] + "..."
        body.append(("%s/%s" % (r["folder"], r["file"]), r["stage"], result))
    w0 = max([len(headers[0])] + [len(b[0]) for b in body])
    w1 = max([len(headers[1])] + [len(b[1]) for b in body])
    print("%-*s  %-*s  %s" % (w0, headers[0], w1, headers[1], headers[2]))
    print("-" * (w0 + w1 + 4 + 40))
    for b in body:
        print("%-*s  %-*s  %s" % (w0, b[0], w1, b[1], b[2]))
    print()


def summarize(rows, build):
    folders = []
    for r in rows:
        if r["folder"] not in folders:
            folders.append(r["folder"])
    summary = {}
    for f in folders + ["all"]:
        rs = [r for r in rows if f == "all" or r["folder"] == f]
        s = {
            "files": len(rs),
            "skipped": sum(r["status"] == "skipped" for r in rs),
            "import_ok": sum(r["import_rc"] == 0 for r in rs),
            "import_fail": sum(r["stage"] == "import" and r["status"] != "ok" for r in rs),
            "timeout": sum(r["status"] == "timeout" for r in rs),
        }
        if build:
            s["build_ok"] = sum(r["stage"] == "build" and r["status"] == "ok" for r in rs)
            s["build_fail"] = sum(r["stage"] == "build" and r["status"] != "ok" for r in rs)
        summary[f] = s
    cols = ["files", "skipped", "import_ok", "import_fail"] + (["build_ok", "build_fail"] if build else []) + ["timeout"]
    w0 = max(len("folder"), max(len(f) for f in summary))
    print("summary" + (" (import + build)" if build else " (import only)"))
    print("%-*s  %s" % (w0, "folder", "  ".join("%11s" % c for c in cols)))
    for f, s in summary.items():
        print("%-*s  %s" % (w0, f, "  ".join("%11d" % s[c] for c in cols)))
    print("(skipped files are not counted as passed; timeouts are included in the *_fail columns of their stage)")
    return summary


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    files = collect(args.folders)
    if not files:
        die("no .py problem files in %s" % ", ".join(args.folders))

    python = find_python(args.python)
    skips = {}
    for prefix, module in OPTIONAL_DEPS:
        if any(os.path.basename(p).startswith(prefix) for _, p in files):
            skips[module] = importable(python, module)
    for module, ok in skips.items():
        if not ok:
            sys.stderr.write("coverage: %s is not importable in %s: files needing it are skipped\n" % (module, python))

    own_work = args.work is None
    work = tempfile.mkdtemp(prefix="kforge-coverage-") if own_work else os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    sys.stderr.write("coverage: %d files, kforge %s, %s, timeout %g s/file, -j %d, work %s\n" % (
        len(files), args.kforge, "import+build" if args.build else "import only", args.timeout, args.jobs, work))

    rows = [None] * len(files)
    done = [0]
    lock = threading.Lock()
    t_start = time.monotonic()

    def task(i):
        folder, path = files[i]
        try:
            row = process(i, folder, path, args, work, skips)
        except Exception as e:  # a bug here must not lose the other rows
            row = {"folder": folder, "file": os.path.basename(path), "path": path, "stage": "-",
                   "status": "fail", "error": "coverage.py internal error: %r" % (e,),
                   "import_rc": None, "import_s": None, "build_rc": None, "build_s": None}
        rows[i] = row
        with lock:
            done[0] += 1
            secs = (row["import_s"] or 0) + (row["build_s"] or 0)
            msg = row["status"] if row["status"] in ("ok", "skipped") else "%s: %s" % (row["status"].upper(), row["error"])
            sys.stderr.write("[%d/%d] %s/%s: %s %s (%.1f s)\n" % (
                done[0], len(files), row["folder"], row["file"], row["stage"], msg[:200], secs))
            sys.stderr.flush()
        return row

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(task, range(len(files))))

    print_table(rows, args.build)
    summary = summarize(rows, args.build)
    elapsed = time.monotonic() - t_start

    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump({
                "kforge": args.kforge, "build": args.build, "timeout_s": args.timeout, "jobs": args.jobs,
                "python": python, "optional_modules": skips, "elapsed_s": round(elapsed, 1),
                "summary": summary, "rows": rows,
            }, fh, indent=2)
        sys.stderr.write("coverage: wrote %s\n" % args.json_out)

    if own_work and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        sys.stderr.write("coverage: outputs kept in %s\n" % work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
