# threat: none: an honest ModelNew that asks for the caller's stream (as every generated ModelNew
# does) and works on it; the timing checks must not flag it (a false alarm here flags every candidate)
# layer: runtime
# expect: ok
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
        stream = torch.cuda.current_stream(x.device)
        y = torch.empty_like(x)
        with torch.cuda.stream(stream):
            torch.clamp(x, min=0.0, out=y)
        return y
