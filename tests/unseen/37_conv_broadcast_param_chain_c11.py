"""Composes a conv2d and a chain of broadcasts with (C,1,1) parameters: scale, shift, a sigmoid gate and a division."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.scale = nn.Parameter(torch.randn(out_channels, 1, 1))
        self.shift = nn.Parameter(torch.randn(out_channels, 1, 1))
        self.gamma = nn.Parameter(torch.randn(out_channels, 1, 1))
        self.offset = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        y = (x * self.scale + self.shift) * torch.sigmoid(self.gamma * x)
        return y - self.offset / (1.0 + self.scale.abs())


batch_size = 32
in_channels = 16
out_channels = 32
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
