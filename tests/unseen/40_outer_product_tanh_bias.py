"""Composes a batched outer product via unsqueeze broadcasting, torch.outer of two parameter vectors as a bias, tanh and a sum over dim 1."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, m, n):
        super().__init__()
        self.u = nn.Parameter(torch.randn(m))
        self.v = nn.Parameter(torch.randn(n))

    def forward(self, a, b):
        outer = a.unsqueeze(2) * b.unsqueeze(1)
        y = torch.tanh(outer + torch.outer(self.u, self.v))
        return y + y.sum(dim=1, keepdim=True) * 0.01


batch_size = 64
m = 256
n = 256


def get_inputs():
    return [torch.randn(batch_size, m), torch.randn(batch_size, n)]


def get_init_inputs():
    return [m, n]
