"""Composes int64 arithmetic on ids (multiply, add, remainder, floor divide, parity test), two embeddings and a torch.where."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_buckets, dim):
        super().__init__()
        self.num_buckets = num_buckets
        self.emb_a = nn.Embedding(num_buckets, dim)
        self.emb_b = nn.Embedding(num_buckets, dim)

    def forward(self, ids):
        h1 = (ids * 31 + 7) % self.num_buckets
        h2 = torch.div(ids, 3, rounding_mode="floor") % self.num_buckets
        even = (ids % 2 == 0).unsqueeze(-1)
        a = self.emb_a(h1)
        b = self.emb_b(h2)
        return torch.where(even, a + b, a - b)


batch_size = 64
seq_len = 256
num_buckets = 4096
dim = 128


def get_inputs():
    return [torch.randint(0, 1000000, (batch_size, seq_len))]


def get_init_inputs():
    return [num_buckets, dim]
