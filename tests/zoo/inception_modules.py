"""GoogLeNet-style Inception modules: four parallel branches (1x1; 1x1->3x3; 1x1->3x3->3x3; 3x3 max pool->1x1) concatenated on channels, with BN-ReLU convs, stacked between max pools."""
import torch
import torch.nn as nn


class ConvBNReLU(nn.Sequential):
    def __init__(self, inp, oup, k, stride=1, padding=0):
        super().__init__(nn.Conv2d(inp, oup, k, stride, padding, bias=False), nn.BatchNorm2d(oup, eps=1e-3), nn.ReLU(inplace=True))


class Inception(nn.Module):
    def __init__(self, inp, c1, c3r, c3, c5r, c5, pool_proj):
        super().__init__()
        self.b1 = ConvBNReLU(inp, c1, 1)
        self.b2 = nn.Sequential(ConvBNReLU(inp, c3r, 1), ConvBNReLU(c3r, c3, 3, padding=1))
        self.b3 = nn.Sequential(ConvBNReLU(inp, c5r, 1), ConvBNReLU(c5r, c5, 3, padding=1), ConvBNReLU(c5, c5, 3, padding=1))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1), ConvBNReLU(inp, pool_proj, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], dim=1)


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = nn.Sequential(
            ConvBNReLU(3, 64, 3, stride=2, padding=1),
            ConvBNReLU(64, 96, 3, padding=1),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        self.a3 = Inception(96, 64, 96, 128, 16, 32, 32)
        self.b3 = Inception(256, 128, 128, 192, 32, 96, 64)
        self.pool3 = nn.MaxPool2d(3, stride=2, padding=1)
        self.a4 = Inception(480, 192, 96, 208, 16, 48, 64)
        self.b4 = Inception(512, 160, 112, 224, 24, 64, 64)
        self.pool4 = nn.MaxPool2d(2, stride=2)
        self.a5 = Inception(512, 256, 160, 320, 32, 128, 128)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(832, num_classes)

    def forward(self, x):
        x = self.stem(x)
        x = self.pool3(self.b3(self.a3(x)))
        x = self.pool4(self.b4(self.a4(x)))
        x = self.a5(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


batch_size = 4
num_classes = 1000
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes]
