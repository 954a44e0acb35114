"""Composes a GEMM with a weight parameter, a division by a constant, a keepdim sum over features and a scaling."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, divisor, scale):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.divisor = divisor
        self.scale = scale

    def forward(self, x):
        y = torch.matmul(x, self.weight.t()) / self.divisor
        return torch.sum(y, dim=1, keepdim=True) * self.scale + y


batch_size = 128
in_features = 1024
out_features = 2048
divisor = 3.0
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, divisor, scale]
