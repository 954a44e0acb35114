"""Composes nn.LSTMCell unrolled over a few time steps carrying (h, c), a stack of h and a final h*tanh(c) term."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden_size)

    def forward(self, x, h0, c0):
        h, c = h0, c0
        outs = []
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
            outs.append(h)
        seq = torch.stack(outs, dim=1)
        return seq + (h * torch.tanh(c)).unsqueeze(1)


batch_size = 64
steps = 5
input_size = 128
hidden_size = 512


def get_inputs():
    return [
        torch.randn(batch_size, steps, input_size),
        torch.randn(batch_size, hidden_size),
        torch.randn(batch_size, hidden_size),
    ]


def get_init_inputs():
    return [input_size, hidden_size]
