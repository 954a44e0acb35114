"""MobileNetV1: a stem conv and depthwise-separable blocks (3x3 depthwise conv with groups=channels + BN + ReLU, 1x1 pointwise conv + BN + ReLU), width multiplier, pool and classifier."""
import torch
import torch.nn as nn


def conv_bn(inp, oup, stride):
    return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1, bias=False), nn.BatchNorm2d(oup), nn.ReLU(inplace=True))


def conv_dw(inp, oup, stride):
    return nn.Sequential(
        nn.Conv2d(inp, inp, 3, stride, 1, groups=inp, bias=False),
        nn.BatchNorm2d(inp),
        nn.ReLU(inplace=True),
        nn.Conv2d(inp, oup, 1, 1, 0, bias=False),
        nn.BatchNorm2d(oup),
        nn.ReLU(inplace=True),
    )


class Model(nn.Module):
    def __init__(self, num_classes, width_mult):
        super().__init__()
        c = lambda n: max(8, int(n * width_mult))
        plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
        layers = [conv_bn(3, c(32), 2)]
        inp = c(32)
        for out, stride in plan:
            layers.append(conv_dw(inp, c(out), stride))
            inp = c(out)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(inp, num_classes)

    def forward(self, x):
        x = self.pool(self.features(x))
        return self.fc(x.view(x.size(0), -1))


batch_size = 8
num_classes = 1000
width_mult = 0.5
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes, width_mult]
