"""Helpers of the kforge agent tests: a scripted OpenAI-protocol server process and a runner of
`kforge agent` against it."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RELU = REPO / "tests" / "threats" / "problem_relu.py"
SERVER = Path(__file__).resolve().parent / "fake_openai_server.py"


def kforge_bin():
    b = os.environ.get("KFORGE_BIN")
    if not b or not os.path.exists(b):
        pytest.skip("KFORGE_BIN is not set to a built kforge (ctest sets it)")
    return b


class Server:
    def __init__(self, tmp, script, name="server"):
        self.dir = Path(tmp)
        self.script = self.dir / (name + ".json")
        self.script.write_text(json.dumps(script))
        self.port_file = self.dir / (name + ".port")
        self.log = self.dir / (name + ".requests.jsonl")

    def __enter__(self):
        self.p = subprocess.Popen([sys.executable, str(SERVER), str(self.script), "--port-file", str(self.port_file),
                                   "--log", str(self.log)])
        for _ in range(200):
            if self.port_file.exists():
                break
            time.sleep(0.05)
        self.url = "http://127.0.0.1:%s/v1" % self.port_file.read_text()
        return self

    def requests(self):
        return [json.loads(l) for l in self.log.read_text().splitlines()] if self.log.exists() else []

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def turn(*calls, content=None, **extra):
    d = {"tool_calls": list(calls), "content": content}
    d.update(extra)
    return d


def load_events(out):
    p = Path(out) / "trajectory.jsonl"
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip()]


def run_agent(url, out, *extra, harness=None, env=None, timeout=600, problem=RELU, check=True):
    argv = [kforge_bin(), "agent", str(problem), "--llm", url, "--model", "scripted-model", "--out", str(out),
            "--request-timeout", "5", "--backoff", "0.01", "--device", "cpu"] + list(extra)
    if harness is not None:
        hp = Path(out).parent / (Path(out).name + ".harness.json")
        hp.write_text(json.dumps(harness))
        argv += ["--test-harness-script", str(hp)]
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


GOOD_MODEL_NEW = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__global__ void relu_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
extern "C" void relu_launch(const float* x, float* y, long n, void* stream) {
  relu_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(x, y, n);
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
extern "C" void relu_launch(const float* x, float* y, long n, void* stream);
torch::Tensor relu_forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  relu_launch(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), at::cuda::getCurrentCUDAStream().stream());
  return y;
}
"""

_ext = load_inline(name="agent_relu_MARK", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC], functions=["relu_forward"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.relu_forward(x)  # MARK
'''


def model_new(mark):
    return GOOD_MODEL_NEW.replace("MARK", mark)


GOOD_CU = r"""// a ReLU kernel
__global__ void relu_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
BAD_CU = GOOD_CU.replace("y[i] = x[i]", "y[i] = x[i")

HARNESS = {"rules": [
    {"contains": "RELU_GOOD", "verify": {"outcome": "ok", "max_abs_err": 0.0},
     "profile": {"outcome": "ok", "t_candidate": 0.5e-3, "t_eager": 1.0e-3, "t_compile": 0.8e-3}},
    {"contains": "RELU_SLOWER_THAN_COMPILE", "verify": {"outcome": "ok"},
     "profile": {"outcome": "ok", "t_candidate": 0.9e-3, "t_eager": 1.0e-3, "t_compile": 0.5e-3}},
    {"contains": "RELU_ESCAPED", "verify": {"outcome": "ok"},
     "profile": {"outcome": "ok", "t_candidate": 0.1e-3, "t_eager": 1.0e-3, "t_compile": 1.0e-3,
                 "escaped_stream": True, "other_streams": 1}},
    {"contains": "RELU_WRONG", "verify": {"outcome": "wrong_answer", "max_abs_err": 0.7,
                                          "message": "output 0: max abs error 0.7 > 0.01"}}],
    # Anything else would be judged correct and fast: a -1 then comes from the checks before the harness.
    "default": {"outcome": "ok", "t_candidate": 0.1e-3, "t_eager": 1.0e-3, "t_compile": 1.0e-3}}
