"""kforge serve on the GPU machine (label gpu; skipped without a GPU, never run so far): Ray finds the GPU and
the pool has one evaluation worker per GPU; a skill session and a submitted ModelNew are measured (not
predicted) and agree with `kforge evaluate` run directly; the load test's figures on the GPU path."""

import json
import os
import subprocess

import pytest

from conftest import needs_service

needs_service()

from conftest import KFORGE, PROBLEM, REPO, Server, headers, httpx, wait_job  # noqa: E402
from kforge.service.loadtest import run  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU (/dev/nvidia0)")]
TOKEN = "tok-gpu"


@pytest.fixture(scope="module")
def server(kforge_bin, tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("gpu") / "srv", ["--build-workers", "4"], {TOKEN: "gpu"})
    s.start(timeout=300)
    yield s
    s.stop()


def post(server, path, body=None, wait=600):
    r = httpx.post(server.url + path, json=body, headers=headers(TOKEN), params={"wait": wait}, timeout=900)
    assert r.status_code in (200, 202), r.text
    return wait_job(server.url, TOKEN, r.json(), timeout=900)


def test_gpu_pool_and_measured_results(server, tmp_path):
    h = httpx.get(server.url + "/v1/health").json()
    assert h["device"] == "cuda" and h["workers"]["gpu"] >= 1
    first = post(server, "/v1/sessions", {"task": {"kind": "kernelbench", "problem": PROBLEM}})
    obs = first["result"]["observation"]
    assert first["result"]["predicted"] is False and obs["measured"] is True
    assert obs["last"]["result"]["outcome"] == "ok" and obs["last"]["reward"] is not None

    problem = REPO / "tests" / "problems" / PROBLEM
    exported = tmp_path / "model_new.py"
    subprocess.run([KFORGE, "export", str(problem), "-o", str(exported)], check=True, timeout=600)
    sid = post(server, "/v1/sessions", {"task": {"kind": "kernelbench", "problem": PROBLEM}, "mode": "llm"})["session"]
    via = post(server, "/v1/sessions/%s/submit" % sid, {"model_new": exported.read_text()})["result"]
    direct = json.loads(subprocess.run([KFORGE, "evaluate", str(problem), str(exported), "--json"],
                                       capture_output=True, text=True, timeout=900).stdout)
    assert via["measured"] is True and via["result"]["outcome"] == direct["outcome"] == "ok"


def test_gpu_load_figures(server):
    figures, _, errors = run(server.url, TOKEN, 16, PROBLEM, timeout=1800)
    print("\nkforge serve load on the GPU path:", json.dumps(figures))
    assert errors == []
