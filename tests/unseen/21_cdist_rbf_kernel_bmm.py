"""Composes batched torch.cdist, a Gaussian (RBF) kernel via square and exp, row normalization and bmm with values."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, sigma):
        super().__init__()
        self.inv_two_sigma_sq = 1.0 / (2.0 * sigma * sigma)

    def forward(self, x, y, v):
        d = torch.cdist(x, y)
        k = torch.exp(-(d * d) * self.inv_two_sigma_sq)
        k = k / (k.sum(dim=-1, keepdim=True) + 1e-6)
        return torch.bmm(k, v)


batch_size = 16
n = 512
m = 512
dim = 64
value_dim = 128
sigma = 2.0


def get_inputs():
    return [torch.randn(batch_size, n, dim), torch.randn(batch_size, m, dim), torch.randn(batch_size, m, value_dim)]


def get_init_inputs():
    return [sigma]
