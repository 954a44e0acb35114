"""Composes advanced column indexing x[:, idx], index_select on a second input, product, relu and a keepdim row sum."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, num_selected):
        super().__init__()
        g = torch.Generator().manual_seed(1234)
        self.register_buffer("idx", torch.randperm(in_features, generator=g)[:num_selected])

    def forward(self, x, y):
        a = x[:, self.idx]
        b = torch.index_select(y, 1, self.idx)
        return torch.relu(a * b) + a.sum(dim=1, keepdim=True) * 0.01


batch_size = 64
in_features = 8192
num_selected = 2048


def get_inputs():
    return [torch.randn(batch_size, in_features), torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, num_selected]
