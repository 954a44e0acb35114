"""Multi-layer nn.LSTM (batch_first) whose initial h0/c0 are registered buffers, returning the final (h_n, c_n) states."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, batch_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=0.0)
        g = torch.Generator().manual_seed(7)
        self.register_buffer("h0", torch.randn(num_layers, batch_size, hidden_size, generator=g))
        self.register_buffer("c0", torch.randn(num_layers, batch_size, hidden_size, generator=g))

    def forward(self, x):
        _, (h_n, c_n) = self.lstm(x, (self.h0, self.c0))
        return h_n, c_n


batch_size = 8
seq_len = 64
input_size = 128
hidden_size = 256
num_layers = 3


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, batch_size]
