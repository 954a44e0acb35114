"""Composes bmm scores, torch.tril and torch.triu(diagonal=1) of them, a transpose, sigmoid, and masked_fill with a registered triu bool mask."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n, band):
        super().__init__()
        far = torch.triu(torch.ones(n, n), diagonal=band) + torch.tril(torch.ones(n, n), diagonal=-band)
        self.register_buffer("far", far.bool())

    def forward(self, x, y):
        s = torch.bmm(x, y.transpose(1, 2)) / x.shape[-1] ** 0.5
        lower = torch.tril(s)
        upper = torch.triu(s, diagonal=1)
        out = lower + torch.sigmoid(upper.transpose(1, 2)) * upper
        return out.masked_fill(self.far, 0.0)


batch_size = 16
n = 512
dim = 64
band = 32


def get_inputs():
    return [torch.randn(batch_size, n, dim), torch.randn(batch_size, n, dim)]


def get_init_inputs():
    return [n, band]
