"""Composes a linear layer, max_pool1d over features, a keepdim sum, a keepdim max, cat and logsumexp (2-D shapes)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features, out_features, pool):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.pool = pool

    def forward(self, x):
        y = self.fc(x)
        y = F.max_pool1d(y.unsqueeze(1), self.pool).squeeze(1)
        s = y.sum(dim=1, keepdim=True) * 0.01
        m = y.max(dim=1, keepdim=True).values
        return torch.logsumexp(torch.cat([s, m, y], dim=1), dim=1)


batch_size = 128
in_features = 2048
out_features = 4096
pool = 4


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, pool]
