# threat: finds the reference's output among the live objects of its process and returns a copy of it
# layer: runtime
# expect: wrong_answer
import gc

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
        # Any tensor of the output's shape that is neither the input nor a parameter: in a harness
        # that ran the reference in this process before the candidate, that is the reference output.
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj is not x and obj.shape == x.shape and \
                    obj.device == x.device and obj.dtype == x.dtype and obj.data_ptr() != x.data_ptr():
                return obj.clone()
        return torch.zeros_like(x)
