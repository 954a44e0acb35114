import torch
import torch.nn as nn


class Model(nn.Module):
    """A matrix times a Python float (kforge's own test problem, in KernelBench's format)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        return A * s


M = 65536
N = 16384


def get_inputs():
    return [torch.rand(M, N), 3.14]


def get_init_inputs():
    return []
