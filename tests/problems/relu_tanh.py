import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU then tanh, on a small input (kforge's own test problem, KernelBench format)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.relu(x))


batch_size = 64
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
