"""EfficientNet-style network of MBConv blocks: 1x1 expand + SiLU, depthwise kxk + SiLU, squeeze-excitation (global pool, two 1x1 convs, sigmoid gate), 1x1 projection and residual."""
import torch
import torch.nn as nn


class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeeze_channels):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeeze_channels, 1)
        self.expand = nn.Conv2d(squeeze_channels, channels, 1)

    def forward(self, x):
        s = x.mean(dim=(2, 3), keepdim=True)
        s = self.expand(nn.functional.silu(self.reduce(s)))
        return x * torch.sigmoid(s)


class MBConv(nn.Module):
    def __init__(self, inp, oup, kernel, stride, expand, se_ratio=0.25):
        super().__init__()
        hidden = inp * expand
        self.use_res = stride == 1 and inp == oup
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(inp, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.SiLU()]
        layers += [
            nn.Conv2d(hidden, hidden, kernel, stride, kernel // 2, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.SiLU(),
            SqueezeExcite(hidden, max(1, int(inp * se_ratio))),
            nn.Conv2d(hidden, oup, 1, bias=False),
            nn.BatchNorm2d(oup),
        ]
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        # expand, channels, repeats, stride, kernel
        cfg = [
            (1, 16, 1, 1, 3),
            (6, 24, 2, 2, 3),
            (6, 40, 2, 2, 5),
            (6, 80, 3, 2, 3),
            (6, 112, 2, 1, 5),
            (6, 192, 2, 2, 5),
        ]
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU())
        blocks = []
        inp = 32
        for e, c, n, s, k in cfg:
            for i in range(n):
                blocks.append(MBConv(inp, c, k, s if i == 0 else 1, e))
                inp = c
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.Conv2d(inp, 640, 1, bias=False), nn.BatchNorm2d(640), nn.SiLU())
        self.fc = nn.Linear(640, num_classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


batch_size = 8
num_classes = 1000
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes]
