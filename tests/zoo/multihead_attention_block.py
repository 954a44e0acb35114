"""Transformer encoder blocks built on nn.MultiheadAttention (batch_first, need_weights=False) with post-norm residuals and a ReLU feed-forward, over float sequence input."""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, heads, ff_dim):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, dropout=0.0, batch_first=True)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff_dim), nn.ReLU(), nn.Linear(ff_dim, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x):
        a, _ = self.attn(x, x, x, need_weights=False)
        x = self.norm1(x + a)
        return self.norm2(x + self.ff(x))


class Model(nn.Module):
    def __init__(self, dim, heads, ff_dim, depth):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, heads, ff_dim) for _ in range(depth)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


batch_size = 8
seq_len = 128
dim = 256
heads = 8
ff_dim = 1024
depth = 3


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, heads, ff_dim, depth]
