"""The HTML report (python -m kforge.report): renders offline from bench and optimize JSON, holds every
problem of the JSON, embeds its plots, and refuses what is not a kforge report without writing."""
import base64
import json
import os
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from kforge import report

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")


def bench_json(n=5, predicted=False):
    probs = []
    for i in range(n):
        level = "level1" if i % 2 else "level2"
        ok = i != 3
        probs.append({"level": level, "problem": f"{i}_Problem<&>{i}", "outcome": "ok" if ok else "compile_error",
                      "correct": ok and not predicted, "predicted": predicted,
                      "t_candidate_ms": 0.5 + i if ok else None, "t_eager_ms": None if predicted else 1.0 + i,
                      "t_compile_ms": None if predicted else 0.8 + i, "t_floor_ms": 0.1 * (i + 1),
                      "build_seconds": 3.0 + i, "verify_seconds": 1.0, "max_abs_err": 1e-5})
    return {"format": "kforge.bench/1", "device": "NVIDIA H100", "torch": "2.11.0", "protocol": "cuda-agent",
            "commit": "abc", "date": "2026-12-06", "suite": "kb", "predicted": predicted, "method": "m",
            "summary": {"all": {"problems": n, "built": n - 1, "correct": n - 1, "pass_rate": 0.8,
                                "speedup_vs_eager": 1.7}},
            "problems": probs}


class Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.imgs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-problem" in a:
            self.rows.append(a["data-problem"])
        if tag == "img":
            self.imgs.append(a["src"])

    def handle_data(self, data):
        self.text.append(data)


def parse(path):
    c = Collect()
    with open(path) as f:
        c.feed(f.read())
    return c


def run_report(*args):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    return subprocess.run([sys.executable, "-m", "kforge.report", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_bench_report_holds_every_problem_and_its_plots(tmp_path):
    d = bench_json(7)
    src = tmp_path / "bench.json"
    src.write_text(json.dumps(d))
    p = run_report(str(src))
    assert p.returncode == 0, p.stderr
    out = tmp_path / "report.html"
    c = parse(out)
    assert sorted(c.rows) == sorted(x["problem"] for x in d["problems"])  # every problem, escaped and back
    assert len(c.imgs) == 4  # time and speed-up plot for each of the two levels
    for s in c.imgs:
        assert s.startswith("data:image/png;base64,")  # embedded: viewable offline
        assert base64.b64decode(s.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    text = " ".join(c.text)
    assert "level1" in text and "level2" in text and "compile_error" in text
    assert "http" not in out.read_text().replace("http-equiv", "")  # nothing fetched from the network


def test_predicted_bench_says_so(tmp_path):
    src = tmp_path / "b.json"
    src.write_text(json.dumps(bench_json(3, predicted=True)))
    assert run_report(str(src), "-o", str(tmp_path / "r.html")).returncode == 0
    assert "PREDICTED" in (tmp_path / "r.html").read_text()


def test_optimize_report_shows_turns_kernels_and_build_times(tmp_path):
    d = {"format": "kforge.report/1", "name": "p", "protocol": "cuda-agent", "device": "cpu (roofline of NVIDIA H200)",
         "result": {"outcome": "ok", "t_candidate": 2.5e-6, "predicted": True, "verified": False},
         "predicted_floor_seconds": 2.4e-6, "build": {"seconds": 7.7},
         "kernels": [{"name": "k0_linear", "impl": "library", "strategy": "cublas_gemm", "ops": ["linear", "relu"],
                      "predicted_seconds": 2.5e-6, "bound": "launch"}],
         "stages_seconds": {"import": 1.0, "plan": 0.1, "codegen_and_build": 7.8},
         "agent": {"policy": "learned", "turns": 2, "max_turns": 200, "evaluations": 3, "reward": 3.0, "seed": 0,
                   "actions": ["fuse_elementwise: fuse k1_relu into k2_mul", "linear_epilogue: k2 into k0"]}}
    src = tmp_path / "report.json"
    src.write_text(json.dumps(d))
    assert run_report(str(src), "-o", str(tmp_path / "r.html")).returncode == 0
    c = parse(tmp_path / "r.html")
    text = " ".join(c.text)
    assert c.rows == ["p"] and "k0_linear" in text and "linear_epilogue: k2 into k0" in text
    assert "codegen_and_build" in text and "turns" in text and len(c.imgs) == 1


def test_not_a_report_is_an_error_and_writes_nothing(tmp_path):
    src = tmp_path / "x.json"
    src.write_text(json.dumps({"format": "something/1"}))
    p = run_report(str(src))
    assert p.returncode == 2 and "not a kforge bench or optimize report" in p.stderr
    assert not (tmp_path / "report.html").exists()


def test_escapes_html():
    page = report.render(bench_json(2))
    assert "<&>" not in page and "&lt;&amp;&gt;" in page
