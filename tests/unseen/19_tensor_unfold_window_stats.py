"""Composes Tensor.unfold sliding windows, max, mean and var over the window dim, sigmoid and arithmetic."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, window, step):
        super().__init__()
        self.window = window
        self.step = step

    def forward(self, x):
        w = x.unfold(2, self.window, self.step)
        peak = w.max(dim=-1).values
        mean = w.mean(dim=-1)
        var = w.var(dim=-1, unbiased=False)
        return (peak - mean) * torch.sigmoid(var)


batch_size = 32
channels = 64
length = 8192
window = 16
step = 8


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [window, step]
