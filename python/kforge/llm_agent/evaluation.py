"""compile, verify and profile of a workspace's candidate, through kforge's oracle:

- the protected files are checked by hash first (a change: outcome `forbidden`, the episode scores -1);
- the static checks are kforge's: `kforge evaluate --static-only` (python/kforge/static_check.py on
  model_new.py, the generated-code CUDA rules on kernels/*.cu), on any machine;
- correctness and timing: `kforge evaluate PROBLEM CANDIDATE --json` (the two-process harness), on a
  machine with an NVIDIA GPU. Without one, verify and profile answer outcome `no_gpu`: nothing verified,
  no reward; the loop says so to the model and in the record.
- compile: nvcc on kernels/*.cu and on the CUDA strings given to load_inline in model_new.py; this runs
  on the CPU too (nvcc needs no GPU).

`Harness` is the one seam: the real one calls kforge; `testing.ScriptedHarness` (tests only) answers
from a script, and every result it makes says `scripted_harness: true`."""
import ast
import glob
import json
import os
import shutil
import subprocess
import tempfile

from .rewards import result_reward


def kforge_bin():
    return os.environ.get("KFORGE_BIN") or shutil.which("kforge") or "kforge"


def gpu_present():
    if os.environ.get("KFORGE_AGENT_DEVICE") == "cpu":
        return False
    if not os.path.exists("/dev/nvidiactl"):
        return False
    smi = shutil.which("nvidia-smi")
    if not smi:
        return True
    try:
        return subprocess.run([smi, "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def last_json_object(text):
    """The last top-level JSON object printed in `text` (kforge prints its report last)."""
    start = text.rfind("\n{")
    candidates = [text.find("{")] if start < 0 else [start + 1, text.find("{")]
    for s in candidates:
        if s is None or s < 0:
            continue
        try:
            return json.loads(text[s:])
        except ValueError:
            continue
    return None


class KforgeHarness:
    """The GPU harness through `kforge evaluate` (the two-process harness)."""
    scripted = False

    def __init__(self, trials=30, timeout=300):
        self.trials = trials
        self.timeout = timeout

    def evaluate(self, ws, profile):
        argv = [kforge_bin(), "evaluate", ws.model_py, ws.model_new_py, "--json", "--protocol", ws.protocol(),
                "--timeout", str(self.timeout)]
        argv += ["--trials", str(self.trials)] if profile else ["--no-profile"]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout + 600)
        except subprocess.TimeoutExpired:
            return {"outcome": "timeout", "verified": False, "message": "kforge evaluate did not answer in time"}
        r = last_json_object(p.stdout)
        if r is None:
            return {"outcome": "error", "verified": False,
                    "message": "kforge evaluate failed (exit %d): %s" % (p.returncode, (p.stderr or p.stdout)[-2000:])}
        return r


def static_checks(ws):
    """kforge's static checks of model_new.py and kernels/*.cu: {outcome: ok|forbidden, findings, message}."""
    cus = sorted(glob.glob(os.path.join(ws.kernels_dir, "**", "*.cu"), recursive=True))
    argv = [kforge_bin(), "evaluate", ws.model_py, ws.model_new_py, "--static-only", "--json"]
    for c in cus:
        argv += ["--cuda", c]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"outcome": "error", "message": "the static checks did not run: %s" % e, "findings": []}
    r = last_json_object(p.stdout)
    if r is None:
        return {"outcome": "error", "findings": [],
                "message": "the static checks failed (exit %d): %s" % (p.returncode, (p.stderr or p.stdout)[-1500:])}
    return r


def cuda_strings(source):
    """The CUDA sources handed to load_inline(cuda_sources=...) in a ModelNew file: literal strings, or
    names of module-level string constants (lists of either)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    consts = {}
    for n in tree.body:
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    consts[t.id] = n.value.value
    out = []

    def resolve(v):
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            out.append(v.value)
        elif isinstance(v, ast.Name) and v.id in consts:
            out.append(consts[v.id])
        elif isinstance(v, (ast.List, ast.Tuple)):
            for e in v.elts:
                resolve(e)

    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name == "load_inline":
                for kw in n.keywords:
                    if kw.arg == "cuda_sources":
                        resolve(kw.value)
    return out


def nvcc_path():
    for c in (os.environ.get("KFORGE_NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.path.exists(c):
            return c
    return None


def _torch_includes():
    try:
        from torch.utils.cpp_extension import include_paths
        return include_paths()
    except Exception:  # torch missing: the strings that include torch fail to compile, and say so
        return []


def compile_workspace(ws, timeout=300):
    """nvcc -c on every kernels/*.cu and every CUDA string of model_new.py (sm_90a). A result dict with
    outcome `compiled` or `compile_error`, and nvcc's words."""
    nvcc = nvcc_path()
    if not nvcc:
        return {"outcome": "error", "message": "nvcc not found (set KFORGE_NVCC)", "units": []}
    units = [(os.path.relpath(c, ws.root), open(c).read())
             for c in sorted(glob.glob(os.path.join(ws.kernels_dir, "**", "*.cu"), recursive=True))]
    try:
        src = open(ws.model_new_py).read()
    except OSError:
        src = ""
    for i, s in enumerate(cuda_strings(src)):
        units.append(("model_new.py:cuda_sources[%d]" % i, s))
    if not units:
        return {"outcome": "compile_error", "units": [],
                "message": "nothing to compile: no kernels/*.cu and no load_inline(cuda_sources=...) in model_new.py"}
    results, failed = [], False
    with tempfile.TemporaryDirectory(prefix="kforge-agent-nvcc-") as tmp:
        for k, (name, text) in enumerate(units):
            cu = os.path.join(tmp, "unit%d.cu" % k)
            with open(cu, "w") as f:
                f.write(text)
            argv = [nvcc, "-std=c++17", "-arch=sm_90a", "-c", cu, "-o", cu + ".o", "-I", ws.kernels_dir]
            if "torch/" in text or "ATen/" in text:
                for inc in _torch_includes():
                    argv += ["-I", inc]
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
                ok, log = p.returncode == 0, (p.stdout + p.stderr).replace(cu, name)
            except subprocess.TimeoutExpired:
                ok, log = False, "nvcc ran past %d s" % timeout
            failed |= not ok
            results.append({"unit": name, "ok": ok, "log": log[-4000:]})
    msg = "\n".join("%s: %s%s" % (r["unit"], "ok" if r["ok"] else "FAILED", ("\n" + r["log"]) if r["log"].strip() else "")
                    for r in results)
    return {"outcome": "compile_error" if failed else "compiled", "units": [r["unit"] for r in results],
            "message": msg}


def evaluate(ws, harness, profile, device="auto"):
    """verify (profile=False) or profile: hash check, static checks, then the harness where a GPU is."""
    tamper = ws.check_protected()
    if tamper:
        r = {"outcome": "forbidden", "verified": False, "tampered": True, "message": tamper}
    else:
        st = static_checks(ws)
        if st.get("outcome") != "ok":
            r = {"outcome": st.get("outcome", "error"), "verified": False, "findings": st.get("findings", []),
                 "message": st.get("message", "")}
        elif harness.scripted or (device == "cuda" or (device == "auto" and gpu_present())):
            r = harness.evaluate(ws, profile)
            if harness.scripted:
                r["scripted_harness"] = True
            if r.get("outcome") == "ok" and r.get("escaped_stream"):
                # the harness's timing-integrity flag (kforge selftest threats reads it the same way)
                r.update(outcome="forbidden", harness_outcome="ok", reward=None,
                         message="the candidate's work escaped the timed stream (other streams, or event time far "
                                 "below host time): not a valid measurement")
        else:
            r = {"outcome": "no_gpu", "verified": False, "static_checks": "clean",
                 "message": "no GPU on this machine: the static checks passed, but correctness and timing cannot be "
                            "measured here (kforge evaluate needs an NVIDIA GPU); nothing was verified"}
    r["reward"] = result_reward(r)
    return r


def entry_point(mode, run_dir):
    """The evaluator/*.py scripts: print the result of `mode` on the workspace of run_dir as JSON."""
    from .workspace import Workspace
    ws = Workspace(run_dir)
    if mode == "compile":
        r = compile_workspace(ws)
    else:
        r = evaluate(ws, KforgeHarness(), profile=(mode == "profile"))
    print(json.dumps(r, indent=1))
    return 0 if r.get("outcome") in ("ok", "compiled") else 1
