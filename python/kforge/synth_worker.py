# kforge synth's worker: the PyTorch and `ast` half of task synthesis, spoken to in JSON lines.
"""Usage: python3 -m kforge.synth_worker --serve

The C++ side (src/synth/worker.cpp) composes tasks and decides; this process only runs what needs
Python. One request per line on stdin, one answer per line on stdout:

  {"cmd": "hello"}                                   -> {"torch": version, "compile": bool}
  {"cmd": "features", "paths": [...]}                -> {"features": [[str...] | null], "errors": [str | null]}
  {"cmd": "trace", "name": n, "sources": [src...]}   -> {"graphs": [graph | {"error": msg}]}
  {"cmd": "check", "name": n, "seed": s, "small": src, "full": src}
      -> {"stages": {...}, "output_shapes": [...], "graph": graph | {"error": msg}, "features": [str...]}

`trace` imports each source with kforge.importer (meta tensors: full H200 sizes cost nothing);
`check` runs the execution filters (synth_checks.py) on the scaled-down source, imports the full one
and fingerprints it for the contamination check (synth_ast.py). Torch runs on one thread, so that
results do not depend on how many workers share the machine.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import traceback


def _import_source(importer, scratch, name, source):
    path = os.path.join(scratch, f"{name}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    try:
        return importer.import_problem(path, "eval")
    except (importer.UserError, importer.InternalError) as e:
        return {"error": str(e).replace(path, f"{name}.py")}
    except Exception as e:  # a failure of the task, reported as data
        return {"error": f"{type(e).__name__}: {e}"}
    finally:
        os.remove(path)


def handle(req, scratch):
    cmd = req.get("cmd")
    if cmd == "hello":
        try:
            import torch
        except ImportError:
            return {"error": "kforge synth needs PyTorch: install it (Debian: apt-get install python3-torch) or set "
                             "KFORGE_PYTHON to a python3 that has torch"}
        return {"torch": torch.__version__, "compile": hasattr(torch, "compile")}
    if cmd == "features":
        from .synth_ast import features_of_file
        feats, errors = [], []
        for p in req["paths"]:
            try:
                feats.append(features_of_file(p))
                errors.append(None)
            except (OSError, SyntaxError, ValueError) as e:
                feats.append(None)
                errors.append(f"{type(e).__name__}: {e}")
        return {"features": feats, "errors": errors}
    if cmd == "trace":
        from . import importer
        name = req.get("name", "task")
        return {"graphs": [_import_source(importer, scratch, f"{name}_{i}", s) for i, s in enumerate(req["sources"])]}
    if cmd == "check":
        from . import importer
        from .synth_ast import features_of_source
        from .synth_checks import run_checks
        name = req.get("name", "task")
        stages, shapes = run_checks(req["small"], req["seed"], name)
        answer = {"stages": stages, "output_shapes": shapes}
        if "full" in req:
            answer["graph"] = _import_source(importer, scratch, name, req["full"])
            answer["features"] = features_of_source(req["full"])
        return answer
    return {"error": f"unknown command {cmd!r}"}


def serve():
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:  # `features` needs no torch; `hello` says what is missing
        pass
    # kforge makes the scratch directory and removes it when it stops the worker; when kforge itself
    # dies, stdin ends and the worker removes it.
    given = os.environ.get("KFORGE_SYNTH_SCRATCH")
    scratch = given if given and os.path.isdir(given) else tempfile.mkdtemp(prefix="kforge-synth-")
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                answer = handle(json.loads(line), scratch)
            except Exception as e:  # a bug of ours: the caller reports it with the trace
                answer = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
            sys.stdout.write(json.dumps(answer, allow_nan=False, default=str) + "\n")
            sys.stdout.flush()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m kforge.synth_worker", description=__doc__.splitlines()[0])
    p.add_argument("--serve", action="store_true", help="answer JSON-line requests on stdin")
    args = p.parse_args(argv)
    if not args.serve:
        p.error("only --serve is supported: kforge synth starts this worker itself")
    return serve()


if __name__ == "__main__":
    sys.exit(main())
