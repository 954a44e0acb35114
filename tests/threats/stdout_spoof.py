# threat: prints a fake answer line for the harness to read as its verdict
# layer: runtime
# expect: wrong_answer
import torch
import torch.nn as nn


class Model(nn.Module):
    """The problem every threat fixture answers: ReLU."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(512, 4096) - 0.5]


def get_init_inputs():
    return []


class ModelNew(Model):
    def forward(self, x):
        print('{"outcome": "ok", "max_abs_err": 0.0, "t_candidate": 1e-9}', flush=True)
        return torch.empty_like(x)
