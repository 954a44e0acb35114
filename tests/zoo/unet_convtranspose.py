"""Small UNet: double-conv (conv-BN-ReLU x2) encoder with max pools, a bottleneck, ConvTranspose2d(stride 2) upsampling, torch.cat skip connections and a 1x1 output conv."""
import torch
import torch.nn as nn


class DoubleConv(nn.Sequential):
    def __init__(self, inp, oup):
        super().__init__(
            nn.Conv2d(inp, oup, 3, padding=1, bias=False), nn.BatchNorm2d(oup), nn.ReLU(inplace=True),
            nn.Conv2d(oup, oup, 3, padding=1, bias=False), nn.BatchNorm2d(oup), nn.ReLU(inplace=True),
        )


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, base):
        super().__init__()
        chs = [base, base * 2, base * 4, base * 8]
        self.downs = nn.ModuleList()
        c = in_channels
        for ch in chs:
            self.downs.append(DoubleConv(c, ch))
            c = ch
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = DoubleConv(chs[-1], chs[-1] * 2)
        self.ups = nn.ModuleList()
        self.up_convs = nn.ModuleList()
        c = chs[-1] * 2
        for ch in reversed(chs):
            self.ups.append(nn.ConvTranspose2d(c, ch, kernel_size=2, stride=2))
            self.up_convs.append(DoubleConv(ch * 2, ch))
            c = ch
        self.out = nn.Conv2d(chs[0], out_channels, 1)

    def forward(self, x):
        skips = []
        for down in self.downs:
            x = down(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for up, conv, skip in zip(self.ups, self.up_convs, reversed(skips)):
            x = conv(torch.cat([skip, up(x)], dim=1))
        return self.out(x)


batch_size = 4
in_channels = 3
out_channels = 4
base = 16
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, out_channels, base]
