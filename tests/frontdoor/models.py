"""Small models for the torch.compile backend's tests: one kforge takes whole, one with an op it does not
take (the graph is split), one with a Python graph break (dynamo gives two graphs)."""
import torch
import torch.nn as nn


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.relu(self.bn(self.conv(x))).mean((2, 3))
        return self.fc(y).softmax(-1)


class WithFft(nn.Module):
    """torch.special.bessel_j0 has no kforge op, and torch.fft.rfft offered alone returns a complex tensor: the
    backend splits the graph around both."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        y = torch.relu(self.fc(x))
        z = torch.fft.rfft(y).abs()
        return torch.tanh(z) * 2.0 + torch.special.bessel_j0(y)[:, :9]


class WithBreak(nn.Module):
    """print() is a dynamo graph break: two graphs reach the backend."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 8)

    def forward(self, x):
        y = torch.sigmoid(self.a(x))
        print("kforge test: graph break")
        return self.b(y) + 1.0
