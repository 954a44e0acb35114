"""Composes a spatial transformer on conv features: a 3x3 conv with relu, adaptive average pooling and a linear predict an affine theta (near the identity), then F.affine_grid and F.grid_sample(padding_mode='zeros') warp the features."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, features):
        super().__init__()
        self.conv = nn.Conv2d(channels, features, 3, padding=1)
        self.fc = nn.Linear(features, 6)
        self.register_buffer("identity", torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))

    def forward(self, x):
        h = torch.relu(self.conv(x))
        feat = F.adaptive_avg_pool2d(h, 1).flatten(1)
        theta = self.identity + 0.2 * torch.tanh(self.fc(feat)).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(h.shape), align_corners=False)
        return F.grid_sample(h, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


batch_size = 16
channels = 8
features = 16
height = 48
width = 48


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, features]
