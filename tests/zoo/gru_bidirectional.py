"""Two-layer bidirectional nn.GRU (batch_first) with an h0 buffer, returning the full output sequence and h_n."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, batch_size):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        g = torch.Generator().manual_seed(11)
        self.register_buffer("h0", torch.randn(num_layers * 2, batch_size, hidden_size, generator=g))

    def forward(self, x):
        output, h_n = self.gru(x, self.h0)
        return output, h_n


batch_size = 8
seq_len = 64
input_size = 128
hidden_size = 256
num_layers = 2


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, batch_size]
