"""Composes a router linear, topk, softmax over the kept logits, scatter into dense gates, a batched expert einsum and a gated sum."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, num_experts, hidden, k):
        super().__init__()
        self.k = k
        self.router = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.Parameter(torch.randn(num_experts, dim, hidden) / dim ** 0.5)

    def forward(self, x):
        logits = self.router(x)
        top_vals, top_idx = torch.topk(logits, self.k, dim=-1)
        gates = torch.zeros_like(logits).scatter(-1, top_idx, torch.softmax(top_vals, dim=-1))
        expert_out = torch.relu(torch.einsum("bd,edh->beh", x, self.experts))
        return (gates.unsqueeze(-1) * expert_out).sum(dim=1)


batch_size = 256
dim = 256
num_experts = 8
hidden = 512
k = 2


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, num_experts, hidden, k]
