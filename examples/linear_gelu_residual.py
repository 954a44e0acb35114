# A small KernelBench-format problem shipped with kforge: Linear, GELU, a scaled residual add.
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = GELU(x W^T + b) * scale + x"""

    def __init__(self, features, scale):
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x):
        y = self.proj(x)
        y = torch.nn.functional.gelu(y)
        return y * self.scale + x


batch_size = 4096
features = 2048
scale = 0.5


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features, scale]
