"""Composes a conv2d, clamp(min=...), torch.min with a 0-d constant buffer, a (C,1,1) scale and avg_pool2d."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, floor, cap):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.floor = floor
        self.register_buffer("cap", torch.tensor(cap))
        self.scale = nn.Parameter(torch.rand(out_channels, 1, 1) + 0.5)

    def forward(self, x):
        x = torch.clamp(self.conv(x), min=self.floor)
        x = torch.min(x, self.cap) * self.scale
        return F.avg_pool2d(x, 2)


batch_size = 32
in_channels = 8
out_channels = 64
height = 64
width = 64
floor = -0.25
cap = 0.4


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, floor, cap]
