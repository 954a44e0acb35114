import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise ReLU (kforge's own test problem, in KernelBench's format)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
