"""Hand-written Elman RNN: a hidden-state buffer reset with copy_ each call, per-step cat(input, hidden) -> linear -> tanh written back in place with copy_, and a linear readout of every step."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, batch_size):
        super().__init__()
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        g = torch.Generator().manual_seed(3)
        self.register_buffer("h_init", torch.randn(batch_size, hidden_size, generator=g))
        self.register_buffer("hidden", self.h_init.clone())

    def forward(self, x):
        # x: (T, B, input_size)
        self.hidden.copy_(self.h_init)
        outs = []
        for t in range(x.shape[0]):
            combined = torch.cat((x[t], self.hidden), dim=1)
            self.hidden.copy_(torch.tanh(self.i2h(combined)))
            outs.append(self.h2o(self.hidden))
        return torch.stack(outs, dim=0)


seq_len = 16
batch_size = 8
input_size = 256
hidden_size = 512
output_size = 128


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size, batch_size]
