"""Composes avg_pool2d, F.interpolate(mode='bilinear', align_corners=False) back to size, subtraction, abs and a detail-boost product."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        low = F.avg_pool2d(x, self.factor)
        up = F.interpolate(low, size=x.shape[-2:], mode="bilinear", align_corners=False)
        detail = torch.abs(x - up)
        return x * (1.0 + detail.mean(dim=1, keepdim=True))


batch_size = 16
channels = 32
height = 96
width = 96
factor = 4


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [factor]
