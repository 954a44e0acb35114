"""Composes a bool length mask (arange < lengths), ~mask with masked_fill to 0 and to -inf, a masked mean and max, cat and a linear."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, out_features):
        super().__init__()
        self.fc = nn.Linear(2 * dim, out_features)

    def forward(self, x, lengths):
        l = x.shape[1]
        valid = torch.arange(l, device=x.device).unsqueeze(0) < lengths.unsqueeze(1)
        invalid = ~valid.unsqueeze(-1)
        mean = x.masked_fill(invalid, 0.0).sum(dim=1) / lengths.unsqueeze(1).to(x.dtype)
        peak = x.masked_fill(invalid, float("-inf")).max(dim=1).values
        return torch.tanh(self.fc(torch.cat([mean, peak], dim=1)))


batch_size = 64
seq_len = 256
dim = 256
out_features = 1024


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim), torch.randint(1, seq_len + 1, (batch_size,))]


def get_init_inputs():
    return [dim, out_features]
