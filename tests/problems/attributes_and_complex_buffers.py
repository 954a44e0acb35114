# Tensors a model keeps outside its parameters: a causal mask and a position table as plain attributes
# (not registered buffers), rotary angles as a complex plain attribute (as Meta's LLaMA keeps freqs_cis) and
# as a complex buffer. kforge reads all four as graph params; ModelNew registers the plain ones as
# non-persistent buffers so that model.to(device) moves them.
import torch
import torch.nn as nn


class Rotary(nn.Module):
    def __init__(self, seq, half):
        super().__init__()
        angles = torch.outer(torch.arange(seq).float(), 1.0 / (100.0 ** (torch.arange(half).float() / half)))
        self.freqs_cis = torch.polar(torch.ones_like(angles), angles)
        self.register_buffer("freqs_buf", torch.polar(torch.ones_like(angles), angles * 0.5))

    def forward(self, x):
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(z * self.freqs_cis * self.freqs_buf).flatten(-2)


class Model(nn.Module):
    def __init__(self, seq, dim):
        super().__init__()
        self.mask = torch.tril(torch.ones(seq, seq))
        self.position = torch.linspace(-1.0, 1.0, dim)
        self.rotary = Rotary(seq, dim // 2)

    def forward(self, x):
        scores = (x @ x.transpose(-1, -2)).masked_fill(self.mask == 0, float("-inf")).softmax(-1)
        return self.rotary(scores @ x + self.position)


def get_inputs():
    return [torch.randn(4, 16, 32)]


def get_init_inputs():
    return [16, 32]
