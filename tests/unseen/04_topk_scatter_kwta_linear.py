"""Composes topk, scatter of the kept values into a zero tensor (k-winners-take-all) and a linear layer with relu."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, k):
        super().__init__()
        self.k = k
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        vals, idx = torch.topk(x, self.k, dim=1)
        sparse = torch.zeros_like(x).scatter(1, idx, vals)
        return torch.relu(self.fc(sparse))


batch_size = 128
in_features = 4096
out_features = 1024
k = 64


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, k]
