"""Composes a Mamba-style selective scan over a short sequence: softplus step sizes, cumsum of dt*A, a causal segment-sum masked with -inf, exp, einsums and a skip term."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim, state):
        super().__init__()
        self.to_dt = nn.Linear(dim, dim)
        self.to_b = nn.Linear(dim, state, bias=False)
        self.to_c = nn.Linear(dim, state, bias=False)
        self.a_log = nn.Parameter(torch.log(torch.arange(1, state + 1, dtype=torch.float32)).repeat(dim, 1))
        self.d = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # x: (B, L, D)
        l = x.shape[1]
        dt = F.softplus(self.to_dt(x))                      # (B, L, D)
        bm = self.to_b(x)                                    # (B, L, N)
        cm = self.to_c(x)                                    # (B, L, N)
        a = -torch.exp(self.a_log)                           # (D, N)
        da = torch.cumsum(dt.unsqueeze(-1) * a, dim=1)       # (B, L, D, N)
        seg = da.unsqueeze(2) - da.unsqueeze(1)              # (B, t, s, D, N): sum over (s, t]
        causal = torch.tril(torch.ones(l, l, dtype=torch.bool, device=x.device))
        seg = seg.masked_fill(~causal.view(1, l, l, 1, 1), float("-inf"))
        decay = torch.exp(seg)
        u = (dt * x).unsqueeze(-1) * bm.unsqueeze(2)         # (B, s, D, N)
        h = torch.einsum("btsdn,bsdn->btdn", decay, u)       # (B, t, D, N)
        y = torch.einsum("btdn,btn->btd", h, cm)
        return y + x * self.d


batch_size = 16
seq_len = 16
dim = 128
state = 16


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, state]
