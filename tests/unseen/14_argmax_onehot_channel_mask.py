"""Composes argmax over channels, a one-hot mask by comparing with an arange broadcast of shape (1,C,1,1), and a masked product."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.register_buffer("channel_ids", torch.arange(channels).view(1, channels, 1, 1))

    def forward(self, x):
        winner = torch.argmax(x, dim=1, keepdim=True)
        onehot = (self.channel_ids == winner).to(x.dtype)
        return onehot * torch.sigmoid(x) + x.mean(dim=1, keepdim=True)


batch_size = 16
channels = 32
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
