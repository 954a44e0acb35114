# The import server (python/kforge/import_server.py): one forked child per request, each as isolated from the
# next as a fresh `python3 -m kforge.importer` (issue #22 item 5: torch imported once per kforge process).
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from kforge import import_server  # noqa: E402

HEADER = "import torch\nimport torch.nn as nn\n\n"


def problem(tmp_path, name, body):
    p = tmp_path / name
    p.write_text(HEADER + body)
    return str(p)


def relu_problem(tmp_path, name="relu.py", prologue=""):
    return problem(tmp_path, name, prologue + textwrap.dedent("""
        class Model(nn.Module):
            def forward(self, x):
                return torch.relu(x)

        def get_inputs():
            return [torch.rand(4, 8)]

        def get_init_inputs():
            return []
        """))


def serve(requests):
    answers = []
    import_server.serve([json.dumps(r) for r in requests], answers.append)
    return answers


def test_each_request_is_imported_in_its_own_child(tmp_path):
    # The first problem changes torch's default dtype at import: the next one must not see it, as it would
    # not in a fresh process (run in this process, the second graph would be float64).
    leaky = relu_problem(tmp_path, "leaky.py", prologue="torch.set_default_dtype(torch.float64)\n")
    clean = relu_problem(tmp_path, "clean.py")
    out = [tmp_path / "a.json", tmp_path / "b.json"]
    answers = serve([{"argv": [leaky, "-o", str(out[0])], "log": str(tmp_path / "a.log")},
                     {"argv": [clean, "-o", str(out[1])], "log": str(tmp_path / "b.log")}])
    assert answers == [{"exit": 0}, {"exit": 0}], (tmp_path / "a.log").read_text() + (tmp_path / "b.log").read_text()
    dtypes = [{v["dtype"] for v in json.loads(o.read_text())["inputs"]} for o in out]
    assert dtypes == [{"float64"}, {"float32"}]
    assert torch_default_dtype_here() == "torch.float32"


def torch_default_dtype_here():
    import torch
    return str(torch.get_default_dtype())


def test_user_error_exit_status_and_message_reach_the_log(tmp_path):
    bad = problem(tmp_path, "bad.py", "x = 1\n")  # no Model
    answers = serve([{"argv": [bad, "-o", str(tmp_path / "o.json")], "log": str(tmp_path / "log")}])
    assert answers == [{"exit": 2}]
    assert "kforge import: error: " in (tmp_path / "log").read_text()
    assert not (tmp_path / "o.json").exists()


def test_a_child_killed_by_a_signal_is_answered_and_the_server_goes_on(tmp_path):
    dies = problem(tmp_path, "dies.py", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    ok = relu_problem(tmp_path)
    answers = serve([{"argv": [dies, "-o", str(tmp_path / "d.json")], "log": str(tmp_path / "d.log")},
                     {"argv": [ok, "-o", str(tmp_path / "ok.json")], "log": str(tmp_path / "ok.log")}])
    assert answers == [{"signal": 9}, {"exit": 0}]


def test_server_speaks_lines_over_pipes(tmp_path):
    ok = relu_problem(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    req = json.dumps({"argv": [ok, "-o", str(tmp_path / "g.json")], "log": str(tmp_path / "log")})
    p = subprocess.run([sys.executable, "-m", "kforge.import_server"], input=req + "\n" + req + "\n",
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert [json.loads(line) for line in p.stdout.splitlines()] == [{"exit": 0}, {"exit": 0}]
    assert json.loads((tmp_path / "g.json").read_text())["format"] == "kforge.graph/1"
