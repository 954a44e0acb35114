"""`kforge bench` and `kforge optimize` write report.html beside their JSON, and bench's progress lines carry
the count and ETA when stderr is not a terminal. Bench runs its GPU flow with the stand-in harness of
tests/cli/test_bench_flow.py (KFORGE_ASSUME_GPU), so the report has measured-looking times on the CPU."""
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(HERE, "../../build/kforge"))
PROBLEMS = os.path.join(HERE, "../problems")
EXAMPLE = os.path.join(HERE, "../../examples/linear_gelu_residual.py")

FAKE = r'''#!PYTHON
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    ans = {"outcome": "ok", "device": "Stand-in GPU", "torch": "9.9", "max_abs_err": 0.0, "max_rel_err": 0.0}
    if req["profile"]:
        ans.update(t_candidate=0.001, t_candidate_repeat=0.001, t_eager=0.002, t_compile=0.0015, samples=req["trials"])
    print(json.dumps(ans), flush=True)
'''


class Rows(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.imgs = [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.rows += [a["data-problem"]] if tag == "tr" and "data-problem" in a else []
        self.imgs += tag == "img" and a.get("src", "").startswith("data:image/png;base64,")


def rows_of(path):
    p = Rows()
    p.feed(open(path).read())
    return p


def test_bench_writes_report_html_and_progress_with_eta(tmp_path):
    fake = tmp_path / "fake_harness.py"
    fake.write_text(FAKE.replace("PYTHON", sys.executable))
    fake.chmod(0o755)
    suite = tmp_path / "suite" / "level1"
    suite.mkdir(parents=True)
    names = ("19_ReLU.py", "21_Sigmoid.py", "22_Tanh.py")
    for name in names:
        (suite / name).write_text(open(os.path.join(PROBLEMS, "level1", name)).read())
    env = dict(os.environ, KFORGE_SANDBOX="none", KFORGE_ASSUME_GPU="1", KFORGE_HARNESS_PYTHON=str(fake),
               KFORGE_HTML_REPORT="1")
    js = tmp_path / "elsewhere" / "bench.json"
    js.parent.mkdir()
    r = subprocess.run([KFORGE, "bench", "--suite", str(tmp_path / "suite"), "--json", str(js), "--out",
                        str(tmp_path / "out"), "--trials", "2", "--workers", "1", "-j", "2"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for html in (tmp_path / "out" / "report.html", tmp_path / "elsewhere" / "report.html"):
        assert html.exists(), r.stderr
        page = rows_of(html)
        assert sorted(page.rows) == sorted(n[:-3] for n in names) and page.imgs == 2
    assert json.loads(js.read_text())["problems"]  # the JSON is whole
    # Not a terminal: plain lines, each with the count, and an ETA while problems remain.
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("[")]
    assert lines and all(re.search(r"\(\d+/3 done", ln) for ln in lines), r.stderr
    assert any("ETA" in ln for ln in lines) and "\r" not in r.stderr and "\033[" not in r.stderr


def test_optimize_writes_report_html(tmp_path):
    out = tmp_path / "opt"
    r = subprocess.run([KFORGE, "optimize", EXAMPLE, "--device", "cpu", "--out", str(out)],
                       capture_output=True, text=True, env=dict(os.environ, KFORGE_HTML_REPORT="1"), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "report.json").exists() and "wrote " + str(out / "report.html") in r.stderr
    page = open(out / "report.html").read()
    assert rows_of(out / "report.html").rows == ["linear_gelu_residual"] and "turns" in page and "PREDICTED" in page


def test_a_report_that_fails_to_render_is_a_warning(tmp_path):
    """A broken Python side costs the HTML, never the JSON or the exit status (optimize of a graph.json
    needs no Python until the report, so a Python that always fails breaks only the report)."""
    graph = tmp_path / "graph.json"
    r = subprocess.run([KFORGE, "import", EXAMPLE, "-o", str(graph)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "opt"
    env = dict(os.environ, KFORGE_PYTHON="/bin/false", KFORGE_HTML_REPORT="1")
    r = subprocess.run([KFORGE, "optimize", str(graph), "--device", "cpu", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "report.json").exists()
    assert "warning: no HTML report" in r.stderr and not (out / "report.html").exists()
