# threat: none: an honest ModelNew that calls its built library
# layer: static
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


import ctypes as _kf_ctypes
import os as _kf_os

_KF_LIBRARY = _kf_os.path.join(_kf_os.path.dirname(_kf_os.path.abspath(__file__)), "libkforge_relu.so")


class ModelNew(Model):
    def forward(self, x):
        lib = _kf_ctypes.CDLL(_KF_LIBRARY)
        y = torch.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
        stream = torch.cuda.current_stream(x.device).cuda_stream
        rc = lib.kforge_forward(x.data_ptr(), y.data_ptr(), stream)
        if rc != 0:
            raise RuntimeError("kernel failed")
        return y
