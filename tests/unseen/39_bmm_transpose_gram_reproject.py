"""Composes bmm with a transposed operand (Gram matrix), a division, softmax, and a second bmm with a transpose back."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.shape[-1]
        gram = torch.bmm(x, x.transpose(1, 2)) / n
        mix = torch.softmax(gram, dim=-1)
        return torch.bmm(mix.transpose(1, 2), x) + x


batch_size = 32
channels = 128
length = 1024


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return []
