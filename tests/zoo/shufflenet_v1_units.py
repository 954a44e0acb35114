"""ShuffleNet (v1) units: grouped 1x1 conv, channel shuffle via view/transpose/contiguous/view, 3x3 depthwise, grouped 1x1 conv; stride-2 units concat an avg-pooled shortcut."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def channel_shuffle(x, groups):
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(b, c, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, in_ch, out_ch, groups, stride, first_group=True):
        super().__init__()
        self.stride = stride
        self.groups = groups
        branch_out = out_ch - in_ch if stride == 2 else out_ch
        mid = out_ch // 4
        g1 = groups if first_group else 1
        self.conv1 = nn.Conv2d(in_ch, mid, 1, groups=g1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.dw = nn.Conv2d(mid, mid, 3, stride=stride, padding=1, groups=mid, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, branch_out, 1, groups=groups, bias=False)
        self.bn3 = nn.BatchNorm2d(branch_out)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = channel_shuffle(out, self.groups)
        out = self.bn2(self.dw(out))
        out = self.bn3(self.conv3(out))
        if self.stride == 2:
            return F.relu(torch.cat([F.avg_pool2d(x, 3, stride=2, padding=1), out], dim=1))
        return F.relu(x + out)


class Model(nn.Module):
    def __init__(self, num_classes, groups, stage_channels, stage_repeats):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 24, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(24)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        units = []
        in_ch = 24
        for si, (ch, reps) in enumerate(zip(stage_channels, stage_repeats)):
            for i in range(reps):
                stride = 2 if i == 0 else 1
                units.append(ShuffleUnit(in_ch, ch, groups, stride, first_group=not (si == 0 and i == 0)))
                in_ch = ch
        self.units = nn.Sequential(*units)
        self.fc = nn.Linear(in_ch, num_classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.units(x)
        return self.fc(x.mean(dim=(2, 3)))


batch_size = 8
num_classes = 1000
groups = 3
stage_channels = [240, 480, 960]
stage_repeats = [4, 8, 4]
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes, groups, stage_channels, stage_repeats]
