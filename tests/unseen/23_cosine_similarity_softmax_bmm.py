"""Composes F.cosine_similarity with broadcasting (B,N,1,D) vs (B,1,M,D), temperature division, softmax and bmm."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, q, k, v):
        sim = F.cosine_similarity(q.unsqueeze(2), k.unsqueeze(1), dim=-1)
        attn = torch.softmax(sim / self.temperature, dim=-1)
        return torch.bmm(attn, v)


batch_size = 8
n = 128
m = 128
dim = 32
value_dim = 256
temperature = 0.1


def get_inputs():
    return [torch.randn(batch_size, n, dim), torch.randn(batch_size, m, dim), torch.randn(batch_size, m, value_dim)]


def get_init_inputs():
    return [temperature]
