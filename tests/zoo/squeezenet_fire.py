"""SqueezeNet: Fire modules (1x1 squeeze conv, parallel 1x1 and 3x3 expand convs concatenated), ceil-mode max pools and a conv classifier with global average pool."""
import torch
import torch.nn as nn


class Fire(nn.Module):
    def __init__(self, inp, squeeze, expand1x1, expand3x3):
        super().__init__()
        self.squeeze = nn.Conv2d(inp, squeeze, 1)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, 1)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, 3, padding=1)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.act(self.squeeze(x))
        return torch.cat([self.act(self.expand1x1(x)), self.act(self.expand3x3(x))], 1)


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, stride=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),
            Fire(64, 16, 64, 64),
            Fire(128, 16, 64, 64),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),
            Fire(128, 32, 128, 128),
            Fire(256, 32, 128, 128),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),
            Fire(256, 48, 192, 192),
            Fire(384, 48, 192, 192),
            Fire(384, 64, 256, 256),
            Fire(512, 64, 256, 256),
        )
        self.classifier = nn.Sequential(
            nn.Conv2d(512, num_classes, 1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        )

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


batch_size = 8
num_classes = 1000
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes]
