"""Composes a scaled cumsum (price path), cummax (running peak), subtraction, abs and division (relative drawdown)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, returns):
        price = 1.0 + torch.cumsum(returns * self.scale, dim=-1)
        peak = torch.cummax(price, dim=-1).values
        return (peak - price) / (peak.abs() + 1.0)


batch_size = 128
series = 64
length = 256
scale = 0.05


def get_inputs():
    return [torch.randn(batch_size, series, length)]


def get_init_inputs():
    return [scale]
