"""Composes comparisons, two torch.where selections (one with a scalar branch), abs and a multiply."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def forward(self, x, y):
        a = torch.where(x > y, x * 2.0, y - 1.0)
        b = torch.where(torch.abs(a) < self.threshold, a, torch.zeros_like(a))
        return b * torch.abs(y) + a


batch_size = 64
rows = 256
cols = 256
threshold = 1.5


def get_inputs():
    return [torch.randn(batch_size, rows, cols), torch.randn(batch_size, rows, cols)]


def get_init_inputs():
    return [threshold]
