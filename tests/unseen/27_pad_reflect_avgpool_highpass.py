"""Composes F.pad(mode='reflect'), avg_pool2d with stride 1 (box blur), subtraction (high-pass) and sigmoid."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, radius):
        super().__init__()
        self.radius = radius

    def forward(self, x):
        r = self.radius
        blurred = F.avg_pool2d(F.pad(x, (r, r, r, r), mode="reflect"), 2 * r + 1, stride=1)
        return torch.sigmoid((x - blurred) * 4.0)


batch_size = 16
channels = 16
height = 128
width = 128
radius = 2


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [radius]
