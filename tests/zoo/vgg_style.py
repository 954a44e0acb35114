"""VGG-style network: stacks of 3x3 conv + BN + ReLU separated by max pools from a config list, adaptive average pool and an MLP classifier."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_classes, config):
        super().__init__()
        layers = []
        in_ch = 3
        for v in config:
            if v == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                layers += [nn.Conv2d(in_ch, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                in_ch = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
        self.classifier = nn.Sequential(
            nn.Linear(in_ch * 4, 512),
            nn.ReLU(inplace=True),
            nn.Linear(512, 512),
            nn.ReLU(inplace=True),
            nn.Linear(512, num_classes),
        )

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


batch_size = 4
num_classes = 100
config = [32, "M", 64, "M", 128, 128, "M", 256, 256, "M", 256, 256, "M"]
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes, config]
