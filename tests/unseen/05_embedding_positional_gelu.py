"""Composes an nn.Embedding lookup of int64 ids, scaling, a positional embedding indexed by arange, add and GELU."""
import math
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab_size, max_len, dim):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.scale = math.sqrt(dim)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        h = self.tok(ids) * self.scale + self.pos(positions).unsqueeze(0)
        return torch.nn.functional.gelu(h)


batch_size = 64
seq_len = 128
vocab_size = 32000
max_len = 512
dim = 256


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, seq_len))]


def get_init_inputs():
    return [vocab_size, max_len, dim]
