"""Small UNet variant: strided-conv downsampling, F.interpolate(mode='bilinear') upsampling followed by 3x3 conv, torch.cat skips, GroupNorm + SiLU, and a sigmoid output."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvGN(nn.Sequential):
    def __init__(self, inp, oup, stride=1):
        super().__init__(nn.Conv2d(inp, oup, 3, stride=stride, padding=1), nn.GroupNorm(8, oup), nn.SiLU())


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, base, levels):
        super().__init__()
        self.inc = ConvGN(in_channels, base)
        self.downs = nn.ModuleList()
        chs = [base]
        c = base
        for i in range(levels):
            self.downs.append(nn.Sequential(ConvGN(c, c * 2, stride=2), ConvGN(c * 2, c * 2)))
            c *= 2
            chs.append(c)
        self.ups = nn.ModuleList()
        for i in range(levels):
            skip_c = chs[-2 - i]
            self.ups.append(nn.ModuleDict({
                "reduce": ConvGN(c, skip_c),
                "fuse": ConvGN(skip_c * 2, skip_c),
            }))
            c = skip_c
        self.out = nn.Conv2d(base, out_channels, 1)

    def forward(self, x):
        x = self.inc(x)
        skips = [x]
        for down in self.downs:
            x = down(x)
            skips.append(x)
        skips.pop()
        for up in self.ups:
            skip = skips.pop()
            x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
            x = up["fuse"](torch.cat([up["reduce"](x), skip], dim=1))
        return torch.sigmoid(self.out(x))


batch_size = 4
in_channels = 3
out_channels = 2
base = 16
levels = 3
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, out_channels, base, levels]
