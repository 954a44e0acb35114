"""Composes einsum 'bnd,de->bne' (projection), einsum 'bne,bme->bnm' (pairwise scores), a scaling and tanh."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, proj_dim):
        super().__init__()
        self.wq = nn.Parameter(torch.randn(dim, proj_dim) / dim ** 0.5)
        self.wk = nn.Parameter(torch.randn(dim, proj_dim) / dim ** 0.5)
        self.inv_sqrt = 1.0 / proj_dim ** 0.5

    def forward(self, x):
        q = torch.einsum("bnd,de->bne", x, self.wq)
        k = torch.einsum("bnd,de->bne", x, self.wk)
        return torch.tanh(torch.einsum("bne,bme->bnm", q, k) * self.inv_sqrt)


batch_size = 16
n = 256
dim = 128
proj_dim = 64


def get_inputs():
    return [torch.randn(batch_size, n, dim)]


def get_init_inputs():
    return [dim, proj_dim]
