"""Composes a 3-D matmul with a weight, avg_pool1d over the sequence, logsumexp, a keepdim max subtraction and a sum (3-D shapes)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) / in_features ** 0.5)

    def forward(self, x):
        y = torch.matmul(x, self.weight)
        p = F.avg_pool1d(y.transpose(1, 2), 2)
        lse = torch.logsumexp(p, dim=2)
        return lse - lse.max(dim=1, keepdim=True).values + p.sum(dim=2) * 0.01


batch_size = 32
seq_len = 128
in_features = 512
out_features = 2048


def get_inputs():
    return [torch.randn(batch_size, seq_len, in_features)]


def get_init_inputs():
    return [in_features, out_features]
