# threat: launches the work on its own stream, so the timer on the caller's stream sees little of it
# layer: runtime
# expect: escaped_stream
import torch
import torch.nn as nn


class Model(nn.Module):
    """The problem every threat fixture answers: ReLU."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(512, 4096) - 0.5]


def get_init_inputs():
    return []


class ModelNew(Model):
    def forward(self, x):
        y = torch.empty_like(x)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            for _ in range(300):
                torch.clamp(x, min=0.0, out=y)
        return y
