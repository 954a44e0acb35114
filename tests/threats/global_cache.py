# threat: output cached in a global across calls
# layer: static
# expect: forbidden
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


_OUT = None


class ModelNew(Model):
    def forward(self, x):
        global _OUT
        if _OUT is None:
            _OUT = torch.empty_like(x)
        return _OUT
