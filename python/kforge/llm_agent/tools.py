"""The tools the model calls (OpenAI function-calling schemas) and their implementations. Every path is
confined to the workspace; protected files are read-only; the shell runs in bubblewrap where it exists
(the workspace writable, the rest of the file system read-only, no network), else in the workspace with
a scrubbed environment (the record says which). A tool never raises: it returns (text, meta) with
meta["invalid"] set when the call itself was malformed (unknown tool, bad arguments)."""
import glob as globlib
import json
import os
import re
import shutil
import subprocess
import time

from . import evaluation
from .workspace import PROTECTED_IN_WORKSPACE

MAX_OUTPUT = 12000


def _fn(name, description, properties, required):
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


S = {"type": "string"}
I = {"type": "integer"}
TOOL_SPECS = [
    _fn("shell", "Run a bash command in the workspace (sandboxed: only the workspace is writable, no network).",
        {"command": S, "timeout_s": I}, ["command"]),
    _fn("read", "Read a text file of the workspace (or the evaluator), optionally a line range.",
        {"path": S, "offset": I, "limit": I}, ["path"]),
    _fn("write", "Write (create or replace) a file of the workspace.", {"path": S, "content": S}, ["path", "content"]),
    _fn("edit", "Replace one exact, unique occurrence of old_string with new_string in a file.",
        {"path": S, "old_string": S, "new_string": S}, ["path", "old_string", "new_string"]),
    _fn("multi_edit", "Several edits of one file, applied in order; all or none.",
        {"path": S, "edits": {"type": "array", "items": {"type": "object", "properties": {
            "old_string": S, "new_string": S}, "required": ["old_string", "new_string"]}}}, ["path", "edits"]),
    _fn("glob", "Files of the workspace matching a glob pattern (e.g. kernels/*.cu).", {"pattern": S}, ["pattern"]),
    _fn("grep", "Lines matching a regular expression in the workspace's files (optionally a glob of files).",
        {"pattern": S, "files": S}, ["pattern"]),
    _fn("compile", "nvcc on kernels/*.cu and on model_new.py's load_inline CUDA sources (sm_90a).", {}, []),
    _fn("verify", "Check model_new.py: static rules, then correctness against model.py on the GPU.", {}, []),
    _fn("profile", "Verify and time model_new.py against PyTorch eager and torch.compile on the GPU.", {}, []),
    _fn("kforge_import", "kforge traces model.py into its graph (ops, shapes) and prints it.", {}, []),
    _fn("kforge_plan", "Set the current schedule of the other kforge tools: start='kforge' (default) is kforge's "
        "own plan (every skill it applies by default); start='first' is one kernel per op, for you to apply "
        "skills to yourself. Prints the schedule.", {"start": {"type": "string", "enum": ["kforge", "first"]}}, []),
    _fn("kforge_skill_sites", "Every legal site of every kforge skill on the current schedule.", {}, []),
    _fn("kforge_apply_skill", "Apply one site of one kforge skill to the current schedule.",
        {"skill": S, "site": I}, ["skill", "site"]),
    _fn("kforge_build", "kforge generates CUDA for the current schedule and builds it with nvcc.", {}, []),
    _fn("kforge_export", "Write kforge's program for the current schedule as model_new.py (replaces it).", {}, []),
]
TOOL_NAMES = [t["function"]["name"] for t in TOOL_SPECS]
EVALUATING = ("verify", "profile")

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")


def clip(text, limit=MAX_OUTPUT):
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n[... %d characters elided ...]\n" % (len(text) - limit) + text[-half:]


def scrubbed_env(extra_secret=None):
    env = {k: v for k, v in os.environ.items() if not any(w in k.upper() for w in SECRET_WORDS)}
    if extra_secret:
        env.pop(extra_secret, None)
    return env


class ToolError(Exception):
    pass


class Tools:
    def __init__(self, ws, harness, device="auto", api_key_env=None, use_bwrap=True):
        self.ws = ws
        self.harness = harness
        self.device = device
        self.api_key_env = api_key_env
        self.bwrap = shutil.which("bwrap") if use_bwrap else None
        if self.bwrap and subprocess.run([self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "true"],
                                         capture_output=True).returncode != 0:
            self.bwrap = None
        self.kforge_dir = os.path.join(ws.root, "kforge")

    def isolation(self):
        return "bubblewrap (workspace and scratch writable, rest read-only, no network)" if self.bwrap else \
            "none (workspace as cwd, secrets scrubbed from the environment)"

    # --- paths
    def _path(self, p, write=False):
        if not isinstance(p, str) or not p:
            raise ToolError("path must be a non-empty string")
        full = os.path.realpath(p if os.path.isabs(p) else os.path.join(self.ws.root, p))
        root = os.path.realpath(self.ws.root)
        ev = os.path.realpath(self.ws.evaluator)
        inside = full == root or full.startswith(root + os.sep)
        if write:
            if not inside:
                raise ToolError("%s is outside the workspace: only the workspace is writable" % p)
            if os.path.relpath(full, root) in PROTECTED_IN_WORKSPACE:
                raise ToolError("%s is protected (read-only): write model_new.py and kernels/ instead" % p)
        elif not inside and not (full == ev or full.startswith(ev + os.sep)):
            raise ToolError("%s is outside the workspace" % p)
        return full

    # --- dispatch
    def call(self, name, arguments):
        """(text, meta). `arguments` is the raw JSON string of the tool call."""
        t0 = time.monotonic()
        meta = {"tool": name, "invalid": False}
        if name not in TOOL_NAMES:
            meta["invalid"] = True
            return "error: no tool named %r; the tools are: %s" % (name, ", ".join(TOOL_NAMES)), meta
        try:
            args = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else (arguments or {})
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as e:
            meta["invalid"] = True
            return "error: the arguments of %s are not valid JSON (%s); send a JSON object" % (name, e), meta
        spec = next(t for t in TOOL_SPECS if t["function"]["name"] == name)["function"]["parameters"]
        missing = [k for k in spec["required"] if k not in args]
        unknown = [k for k in args if k not in spec["properties"]]
        if missing or unknown:
            meta["invalid"] = True
            return "error: %s%s" % ("missing arguments %s " % missing if missing else "",
                                   "unknown arguments %s" % unknown if unknown else ""), meta
        try:
            text, extra = getattr(self, "t_" + name)(**args)
            meta.update(extra or {})
        except ToolError as e:
            text, meta["error"] = "error: %s" % e, True
        except (TypeError, ValueError) as e:
            text, meta["invalid"] = "error: bad arguments for %s: %s" % (name, e), True
        meta["duration_s"] = round(time.monotonic() - t0, 3)
        return clip(text), meta

    # --- files
    def t_read(self, path, offset=None, limit=None):
        full = self._path(path)
        if os.path.isdir(full):
            return "\n".join(sorted(os.listdir(full))), {}
        try:
            lines = open(full, errors="replace").read().splitlines()
        except OSError as e:
            raise ToolError(str(e))
        start = max(0, int(offset or 1) - 1)
        end = start + int(limit) if limit else len(lines)
        return "\n".join("%6d\t%s" % (i + 1, lines[i]) for i in range(start, min(end, len(lines)))), {}

    def t_write(self, path, content):
        full = self._path(path, write=True)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(content)
        return "wrote %s (%d lines)" % (os.path.relpath(full, self.ws.root), content.count("\n") + 1), {}

    def _edits(self, path, edits):
        full = self._path(path, write=True)
        try:
            text = open(full).read()
        except OSError as e:
            raise ToolError(str(e))
        for k, e in enumerate(edits):
            old, new = e["old_string"], e["new_string"]
            n = text.count(old) if old else 0
            if n != 1:
                raise ToolError("edit %d: old_string occurs %d times in %s (it must occur exactly once)" % (k, n, path))
            text = text.replace(old, new, 1)
        with open(full, "w") as f:
            f.write(text)
        return "edited %s (%d edits)" % (path, len(edits)), {}

    def t_edit(self, path, old_string, new_string):
        return self._edits(path, [{"old_string": old_string, "new_string": new_string}])

    def t_multi_edit(self, path, edits):
        if not isinstance(edits, list) or not all(isinstance(e, dict) and "old_string" in e and "new_string" in e
                                                  for e in edits):
            raise ValueError("edits must be a list of {old_string, new_string}")
        return self._edits(path, edits)

    def t_glob(self, pattern):
        root = self.ws.root
        hits = sorted(os.path.relpath(p, root) for p in globlib.glob(os.path.join(root, pattern), recursive=True))
        return "\n".join(hits) if hits else "(no files match %s)" % pattern, {}

    def t_grep(self, pattern, files="**/*"):
        try:
            rx = re.compile(pattern)
        except re.error as e:
            raise ToolError("bad regular expression: %s" % e)
        out = []
        for p in sorted(globlib.glob(os.path.join(self.ws.root, files), recursive=True)):
            if not os.path.isfile(p):
                continue
            try:
                for i, line in enumerate(open(p, errors="replace")):
                    if rx.search(line):
                        out.append("%s:%d:%s" % (os.path.relpath(p, self.ws.root), i + 1, line.rstrip("\n")))
            except OSError:
                continue
        return "\n".join(out) if out else "(no match)", {}

    # --- shell
    def t_shell(self, command, timeout_s=300):
        timeout_s = max(1, min(int(timeout_s or 300), 1800))
        env = scrubbed_env(self.api_key_env)
        root = self.ws.root
        if self.bwrap:
            # /dev as it is (the GPU's device files); temporary files and the caches tools write go to
            # RUN/scratch, the one writable place besides the workspace
            scratch = os.path.join(self.ws.run_dir, "scratch")
            os.makedirs(scratch, exist_ok=True)
            argv = [self.bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
                    "--bind", root, root, "--bind", scratch, scratch]
            env.update(TMPDIR=scratch, TORCH_EXTENSIONS_DIR=os.path.join(scratch, "torch_extensions"),
                       KFORGE_CACHE=os.path.join(scratch, "kforge-cache"), XDG_CACHE_HOME=os.path.join(scratch, "cache"))
            for p in PROTECTED_IN_WORKSPACE:
                argv += ["--ro-bind", os.path.join(root, p), os.path.join(root, p)]
            argv += ["--unshare-net", "--unshare-pid", "--die-with-parent", "--chdir", root, "bash", "-c", command]
        else:
            argv = ["bash", "-c", command]
        try:
            p = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=timeout_s)
            text = (p.stdout + (("\n[stderr]\n" + p.stderr) if p.stderr else "")).rstrip()
            return "%s\n[exit %d]" % (text, p.returncode), {"exit_code": p.returncode}
        except subprocess.TimeoutExpired:
            return "[killed after %d s]" % timeout_s, {"exit_code": None, "timed_out": True}

    # --- compile / verify / profile
    def t_compile(self):
        r = evaluation.compile_workspace(self.ws)
        return "%s\n%s" % (r["outcome"], r.get("message", "")), {"outcome": r["outcome"]}

    def _evaluate(self, profile):
        r = evaluation.evaluate(self.ws, self.harness, profile, self.device)
        shown = {k: v for k, v in r.items() if k not in ("findings",)}
        if r.get("findings"):
            shown["findings"] = r["findings"][:10]
        return json.dumps(shown, indent=1), {"outcome": r["outcome"], "evaluation": r, "reward": r.get("reward")}

    def t_verify(self):
        return self._evaluate(False)

    def t_profile(self):
        return self._evaluate(True)

    # --- kforge's own compiler
    def _kforge(self, *argv, timeout=900):
        os.makedirs(self.kforge_dir, exist_ok=True)
        try:
            p = subprocess.run([evaluation.kforge_bin()] + list(argv), cwd=self.ws.root, capture_output=True,
                               text=True, timeout=timeout, env=scrubbed_env(self.api_key_env))
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ToolError("kforge did not run: %s" % e)
        return p.returncode, (p.stdout + (("\n" + p.stderr) if p.stderr.strip() else "")).strip()

    def _graph(self):
        g = os.path.join(self.kforge_dir, "graph.json")
        if not os.path.exists(g):
            rc, out = self._kforge("import", self.ws.model_py, "-o", g, "--protocol", self.ws.protocol())
            if rc != 0:
                raise ToolError("kforge import failed: %s" % out)
        return g

    def _schedule(self):
        s = os.path.join(self.kforge_dir, "schedule.json")
        if not os.path.exists(s):
            rc, out = self._kforge("plan", self._graph(), "-o", s, "--protocol", self.ws.protocol())
            if rc != 0:
                raise ToolError("kforge plan failed: %s" % out)
        return s

    def t_kforge_import(self):
        g = self._graph()
        return open(g).read(), {}

    def t_kforge_plan(self, start="kforge"):
        s = os.path.join(self.kforge_dir, "schedule.json")
        if os.path.exists(s):
            os.remove(s)
        if start == "first":
            rc, out = self._kforge("skills", "sites", self._graph(), "--schedule", "first", "--write-schedule", s,
                                   "--protocol", self.ws.protocol())
            if rc != 0:
                raise ToolError("kforge skills sites failed: %s" % out)
        elif start != "kforge":
            raise ValueError("start must be 'kforge' or 'first'")
        return open(self._schedule()).read(), {}

    def t_kforge_skill_sites(self):
        rc, out = self._kforge("skills", "sites", self._graph(), "--schedule", self._schedule(),
                               "--protocol", self.ws.protocol())
        return out, {"exit_code": rc}

    def t_kforge_apply_skill(self, skill, site):
        s = self._schedule()
        rc, out = self._kforge("skills", "apply", self._graph(), "--schedule", s, "--skill", str(skill),
                               "--site", str(int(site)), "-o", s + ".new", "--protocol", self.ws.protocol())
        if rc != 0:
            return out, {"exit_code": rc}
        os.replace(s + ".new", s)
        return "applied %s site %d; the current schedule is kforge/schedule.json" % (skill, int(site)), {"exit_code": 0}

    def t_kforge_build(self):
        rc, out = self._kforge("build", self._graph(), "--schedule", self._schedule(), "--out",
                               os.path.join(self.kforge_dir, "build"), "--force", "--protocol", self.ws.protocol())
        return out, {"exit_code": rc}

    def t_kforge_export(self):
        rc, out = self._kforge("export", self._graph(), "--schedule", self._schedule(), "-o", self.ws.model_new_py,
                               "--force", "--protocol", self.ws.protocol())
        return (out or "wrote model_new.py") + ("" if rc == 0 else "\n[exit %d]" % rc), {"exit_code": rc}
