# A two-dimensional Fourier neural operator (Li et al., 2020) written as its reference code is: a lifting Linear over
# (value, x, y) channels, four Fourier layers (a spectral convolution: rfft2, the lowest modes of both halves of the
# first transformed dim times complex weights written into a complex zeros tensor, irfft2 back; plus a pointwise
# 1x1 convolution; GELU), and a projection MLP. Written for kforge's
# tests after its Fourier transforms were (it is not an unseen problem).
import torch
import torch.nn as nn
import torch.nn.functional as F


class SpectralConv2d(nn.Module):
    def __init__(self, channels, modes1, modes2):
        super().__init__()
        self.modes1, self.modes2 = modes1, modes2
        scale = 1.0 / (channels * channels)
        self.w1 = nn.Parameter(scale * torch.rand(channels, channels, modes1, modes2, dtype=torch.cfloat))
        self.w2 = nn.Parameter(scale * torch.rand(channels, channels, modes1, modes2, dtype=torch.cfloat))

    def forward(self, x):
        # As the reference implementation writes it: a complex zeros tensor, its low-mode corners written in place.
        b, c, h, w = x.shape
        f = torch.fft.rfft2(x)
        out = torch.zeros(b, c, h, w // 2 + 1, dtype=torch.cfloat, device=x.device)
        out[:, :, : self.modes1, : self.modes2] = torch.einsum(
            "bixy,ioxy->boxy", f[:, :, : self.modes1, : self.modes2], self.w1)
        out[:, :, -self.modes1:, : self.modes2] = torch.einsum(
            "bixy,ioxy->boxy", f[:, :, -self.modes1:, : self.modes2], self.w2)
        return torch.fft.irfft2(out, s=(h, w))


class Model(nn.Module):
    def __init__(self, modes, width):
        super().__init__()
        self.lift = nn.Linear(3, width)
        self.spectral = nn.ModuleList(SpectralConv2d(width, modes, modes) for _ in range(4))
        self.pointwise = nn.ModuleList(nn.Conv2d(width, width, 1) for _ in range(4))
        self.proj1 = nn.Linear(width, 128)
        self.proj2 = nn.Linear(128, 1)

    def forward(self, a):
        b, h, w, _ = a.shape
        gx = torch.linspace(0, 1, h, device=a.device).reshape(1, h, 1, 1).expand(b, h, w, 1)
        gy = torch.linspace(0, 1, w, device=a.device).reshape(1, 1, w, 1).expand(b, h, w, 1)
        x = self.lift(torch.cat([a, gx, gy], dim=-1)).permute(0, 3, 1, 2)
        for k, (spec, pw) in enumerate(zip(self.spectral, self.pointwise)):
            x = spec(x) + pw(x)
            if k < 3:
                x = F.gelu(x)
        x = x.permute(0, 2, 3, 1)
        return self.proj2(F.gelu(self.proj1(x)))


def get_inputs():
    return [torch.randn(8, 64, 64, 1)]


def get_init_inputs():
    return [12, 32]
