"""The harness keeps the reference outputs out of the candidate's process: the candidate runs in
kforge.candidate_worker, the reference and the verdict stay in kforge.harness. Runs on the CPU
(device "cpu", candidates in plain PyTorch, static checks off so that only the isolation is tested);
the GPU path is the same code with device cuda:0 (tests/gpu, `kforge selftest threats --gpu`)."""
import importlib.util
import os
import sys

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../python"))
import kforge.harness as h  # noqa: E402

THREATS = os.path.join(HERE, "../threats")
PROBLEM = os.path.join(THREATS, "problem_relu.py")


def write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(open(PROBLEM).read() + "\n\n" + body)
    return str(path)


def evaluate(candidate, child=None, problem=PROBLEM):
    return h.evaluate(problem, candidate, "cuda-agent", device="cpu", do_static_check=False, child=child)


def load(path):
    spec = importlib.util.spec_from_file_location("fixture_%d" % abs(hash(path)), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_an_honest_candidate_passes_and_a_wrong_one_does_not(tmp_path):
    ok = write(tmp_path, "ok.py", "class ModelNew(Model):\n    def forward(self, x):\n        return x.clamp_min(0)\n")
    res = evaluate(ok)
    assert res["outcome"] == "ok", res
    assert res["max_abs_err"] == 0.0
    wrong = write(tmp_path, "wrong.py", "class ModelNew(Model):\n    def forward(self, x):\n        return x.abs()\n")
    res = evaluate(wrong)
    assert res["outcome"] == "wrong_answer" and "differs" in res["message"], res


@pytest.mark.parametrize("fixture", ["reference_scan.py", "caller_frames.py"])
def test_a_candidate_looking_for_the_reference_output_finds_nothing(fixture):
    path = os.path.join(THREATS, fixture)
    # In one process, as the harness ran before, the fixture does find the reference output ...
    mod = load(path)
    torch.manual_seed(0)
    x = mod.get_inputs()[0]
    ref_out = mod.Model()(x)  # noqa: F841  (alive while the candidate runs, as in a shared process)
    stolen = mod.ModelNew()(x)
    assert torch.equal(stolen, torch.relu(x)), "the fixture no longer finds a reference in its own process"
    del ref_out
    # ... and in the candidate's own process there is none to find.
    res = evaluate(path)
    assert res["outcome"] == "wrong_answer", res


def test_a_candidate_process_that_dies_is_a_runtime_fault_and_the_next_one_runs(tmp_path):
    child = h.CandidateProcess()
    try:
        crash = write(tmp_path, "crash.py", "import os, signal\n\nclass ModelNew(Model):\n"
                      "    def forward(self, x):\n        os.kill(os.getpid(), signal.SIGSEGV)\n")
        res = evaluate(crash, child)
        assert res["outcome"] == "runtime_fault" and "signal 11" in res["message"], res
        ok = write(tmp_path, "ok.py", "class ModelNew(Model):\n    def forward(self, x):\n        return torch.relu(x)\n")
        assert evaluate(ok, child)["outcome"] == "ok"
    finally:
        child.stop()


def test_outputs_keep_their_dtypes_and_count(tmp_path):
    problem = tmp_path / "problem.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x, t):\n        return (x * 2, x > 0, t + 1)\n\n\n"
        "def get_inputs():\n    return [torch.randn(3, 5), torch.randint(0, 9, (7,))]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    base = problem.read_text() + "\n\nclass ModelNew(Model):\n    def forward(self, x, t):\n"
    cases = [  # (name, what forward returns, expected outcome, words the message has)
        ("good", "(x + x, x > 0, t + 1)", "ok", ""),
        ("fewer", "(x + x, x > 0)", "wrong_answer", "2 outputs, reference 3"),
        ("cast", "(x + x, (x > 0).float(), t + 1)", "wrong_answer", "dtype"),
        ("aliased", "(x.mul_(2), x > 0, t + 1)", "wrong_answer", "aliases an input"),
        ("not_tensor", "(x + x, 1, t + 1)", "wrong_answer", "not a tensor"),
    ]
    for name, returned, outcome, words in cases:
        path = tmp_path / (name + ".py")
        path.write_text(base + "        return " + returned + "\n")
        res = evaluate(str(path), problem=str(problem))
        assert res["outcome"] == outcome and words in res.get("message", ""), (name, res)


PROBE = """import os

class ModelNew(Model):
    def forward(self, x):
        # The right answer only if the checker's (its parent's) memory can be read.
        try:
            with open('/proc/%d/maps' % os.getppid()) as maps:
                start = int(next(l for l in maps if l.split()[1].startswith('r')).split('-')[0], 16)
            with open('/proc/%d/mem' % os.getppid(), 'rb') as mem:
                mem.seek(start)
                mem.read(1)
            return torch.relu(x)
        except (OSError, StopIteration, ValueError):
            return x.abs()
"""


@pytest.mark.parametrize("hardened", [False, True])
def test_the_candidate_cannot_read_the_checkers_memory(tmp_path, hardened):
    """In kforge's sandbox (bubblewrap, every capability dropped) the checker is not dumpable, so
    the candidate (same user) cannot open /proc/<checker>/mem; without that the probe can."""
    import json
    import shutil
    import subprocess
    bwrap = shutil.which("bwrap")
    sandbox = [bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
               "--bind", str(tmp_path), str(tmp_path), "--unshare-pid", "--cap-drop", "ALL", "--"]
    if not bwrap or subprocess.run(sandbox + ["/bin/true"]).returncode != 0:
        pytest.skip("bubblewrap does not work here")
    probe = write(tmp_path, "probe.py", PROBE)
    script = ("import sys, json; sys.path.insert(0, %r); import kforge.harness as h; %s"
              "print(json.dumps(h.evaluate(%r, %r, 'cuda-agent', device='cpu', do_static_check=False)))"
              % (os.path.join(HERE, "../../python"), "h._not_dumpable(); " if hardened else "", PROBLEM, probe))
    r = subprocess.run(sandbox + [sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, TMPDIR=str(tmp_path)))
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["outcome"] == ("wrong_answer" if hardened else "ok"), (res, r.stderr[-2000:])


def test_a_busy_candidate_process_dies_with_the_checker(tmp_path):
    import signal
    import subprocess
    import time
    hang = write(tmp_path, "hang.py", "import time\ntime.sleep(600)\n\nclass ModelNew(Model):\n    ...\n")
    script = ("import sys, time; sys.path.insert(0, %r); import kforge.harness as h; c = h.CandidateProcess(); "
              "c.send({'cmd': 'load', 'problem': %r, 'candidate': %r, 'protocol': 'cuda-agent', 'device': 'cpu'}); "
              "print(c.proc.pid, flush=True); time.sleep(600)" % (os.path.join(HERE, "../../python"), PROBLEM, hang))
    checker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = int(checker.stdout.readline())

    def running(pid):
        try:
            with open("/proc/%d/status" % pid) as f:
                return "\nState:\tZ" not in f.read()
        except OSError:
            return False

    def cmdline(pid):
        with open("/proc/%d/cmdline" % pid) as f:
            return f.read()

    time.sleep(5)  # the child has loaded torch and sits in the candidate's module code
    assert running(child) and "candidate_worker" in cmdline(child)
    checker.send_signal(signal.SIGKILL)
    checker.wait()
    deadline = time.time() + 30
    while running(child) and time.time() < deadline:
        time.sleep(0.2)
    alive = running(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive, "the candidate's process outlived the checker"


def test_shared_output_descriptors_are_checked_before_they_are_used():
    """The GPU path maps the candidate's outputs from CUDA IPC descriptors it sent: every field is
    checked here before torch sees it (never unpickled), so a forged one is an error, not an action."""
    import base64
    good = {"stride": [1], "storage_offset": 0,
            "ipc": {"device": 0, "handle": base64.b64encode(b"x" * 64).decode(), "size_bytes": 16,
                    "offset_bytes": 0, "ref_counter": base64.b64encode(b"/torch_12_34_0").decode(),
                    "ref_counter_offset": 0, "event": None, "event_sync": False}}
    forged = [
        dict(good, stride=[1, 1]),                 # a layout of another rank
        dict(good, storage_offset=-4),             # before the storage
        dict(good, ipc=dict(good["ipc"], ref_counter=base64.b64encode(b"/../../etc/passwd").decode())),
        dict(good, ipc=dict(good["ipc"], size_bytes=-1)),
    ]
    for m in forged:
        with pytest.raises(ValueError):
            h.open_shared(m, torch.float32, [4], "cuda:0")


def test_out_of_memory_is_resource_exhausted_whoever_raised_it():
    # torch's allocator raises OutOfMemoryError; a failed cudaMalloc (cuDNN scratch, a candidate's own)
    # comes as a plain error with CUDA's message. Both are resource_exhausted, other errors faults.
    assert h.failure_of(RuntimeError("CUDA error: out of memory\nSearch for cudaErrorMemoryAllocation"))["outcome"] == \
        "resource_exhausted"
    if hasattr(torch.cuda, "OutOfMemoryError"):
        assert h.failure_of(torch.cuda.OutOfMemoryError("Tried to allocate 16 GiB"))["outcome"] == "resource_exhausted"
    fault = h.failure_of(ValueError("bad shape"))
    assert fault == {"outcome": "runtime_fault", "message": "ValueError: bad shape"}
