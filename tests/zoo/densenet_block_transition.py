"""DenseNet: dense blocks of BN-ReLU-1x1conv-BN-ReLU-3x3conv layers whose outputs are concatenated (torch.cat), transition layers (BN-ReLU-1x1conv-avgpool) and a classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class DenseLayer(nn.Module):
    def __init__(self, in_ch, growth, bottleneck=4):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_ch)
        self.conv1 = nn.Conv2d(in_ch, bottleneck * growth, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(bottleneck * growth)
        self.conv2 = nn.Conv2d(bottleneck * growth, growth, 3, padding=1, bias=False)

    def forward(self, features):
        x = torch.cat(features, dim=1)
        x = self.conv1(F.relu(self.bn1(x)))
        return self.conv2(F.relu(self.bn2(x)))


class DenseBlock(nn.Module):
    def __init__(self, num_layers, in_ch, growth):
        super().__init__()
        self.layers = nn.ModuleList([DenseLayer(in_ch + i * growth, growth) for i in range(num_layers)])

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, dim=1)


class Transition(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_ch)
        self.conv = nn.Conv2d(in_ch, out_ch, 1, bias=False)
        self.pool = nn.AvgPool2d(2, stride=2)

    def forward(self, x):
        return self.pool(self.conv(F.relu(self.bn(x))))


class Model(nn.Module):
    def __init__(self, num_classes, growth, block_layers):
        super().__init__()
        ch = 2 * growth
        self.stem = nn.Sequential(
            nn.Conv2d(3, ch, 3, padding=1, bias=False),
            nn.BatchNorm2d(ch),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        blocks = []
        for i, n in enumerate(block_layers):
            blocks.append(DenseBlock(n, ch, growth))
            ch = ch + n * growth
            if i != len(block_layers) - 1:
                blocks.append(Transition(ch, ch // 2))
                ch = ch // 2
        self.blocks = nn.Sequential(*blocks)
        self.norm = nn.BatchNorm2d(ch)
        self.fc = nn.Linear(ch, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = F.relu(self.norm(x))
        x = F.adaptive_avg_pool2d(x, (1, 1)).flatten(1)
        return self.fc(x)


batch_size = 4
num_classes = 100
growth = 16
block_layers = [4, 6, 8]
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes, growth, block_layers]
