"""Composes nn.GRUCell unrolled over a few time steps with a Python loop, torch.stack of the hidden states and a tanh readout."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.cell = nn.GRUCell(input_size, hidden_size)

    def forward(self, x, h0):
        h = h0
        outs = []
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
            outs.append(h)
        return torch.tanh(torch.stack(outs, dim=0))


steps = 6
batch_size = 64
input_size = 256
hidden_size = 512


def get_inputs():
    return [torch.randn(steps, batch_size, input_size), torch.randn(batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size]
