"""MobileNetV2: inverted residual blocks (1x1 expand + ReLU6, 3x3 depthwise + ReLU6, linear 1x1 projection, residual add when stride 1 and shapes match), a 1x1 head conv, pool and classifier."""
import torch
import torch.nn as nn


def make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden = inp * expand_ratio
        self.use_res = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers += [nn.Conv2d(inp, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True)]
        layers += [
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, oup, 1, bias=False),
            nn.BatchNorm2d(oup),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res:
            return x + self.conv(x)
        return self.conv(x)


class Model(nn.Module):
    def __init__(self, num_classes, width_mult):
        super().__init__()
        settings = [
            # t, c, n, s
            [1, 16, 1, 1],
            [6, 24, 2, 2],
            [6, 32, 3, 2],
            [6, 64, 4, 2],
            [6, 96, 3, 1],
            [6, 160, 3, 2],
            [6, 320, 1, 1],
        ]
        inp = make_divisible(32 * width_mult)
        last = make_divisible(1280 * max(1.0, width_mult))
        features = [nn.Sequential(nn.Conv2d(3, inp, 3, 2, 1, bias=False), nn.BatchNorm2d(inp), nn.ReLU6(inplace=True))]
        for t, c, n, s in settings:
            oup = make_divisible(c * width_mult)
            for i in range(n):
                features.append(InvertedResidual(inp, oup, s if i == 0 else 1, t))
                inp = oup
        features.append(nn.Sequential(nn.Conv2d(inp, last, 1, bias=False), nn.BatchNorm2d(last), nn.ReLU6(inplace=True)))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Linear(last, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


batch_size = 8
num_classes = 1000
width_mult = 0.75
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes, width_mult]
