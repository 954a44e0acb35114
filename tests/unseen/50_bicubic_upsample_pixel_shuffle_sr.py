"""Composes a super-resolution net: F.interpolate(mode='bicubic', scale 2) of the low-resolution image as a global skip, plus a conv/tanh feature path ending in nn.PixelShuffle(2) (ESPCN-style), added."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, features, scale):
        super().__init__()
        self.scale = scale
        self.head = nn.Conv2d(channels, features, 5, padding=2)
        self.body = nn.Conv2d(features, features, 3, padding=1)
        self.tail = nn.Conv2d(features, channels * scale * scale, 3, padding=1)
        self.shuffle = nn.PixelShuffle(scale)

    def forward(self, x):
        skip = F.interpolate(x, scale_factor=self.scale, mode="bicubic", align_corners=False)
        h = torch.tanh(self.head(x))
        h = torch.tanh(self.body(h))
        return skip + self.shuffle(self.tail(h))


batch_size = 8
channels = 3
features = 32
scale = 2
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, features, scale]
