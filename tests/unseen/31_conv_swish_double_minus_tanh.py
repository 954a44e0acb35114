"""Composes a conv2d and the pointwise chain x * sigmoid(x) * 2 - tanh(x)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        x = self.conv(x)
        return x * torch.sigmoid(x) * 2.0 - torch.tanh(x)


batch_size = 32
in_channels = 16
out_channels = 32
height = 64
width = 64
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
