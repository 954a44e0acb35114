"""Mamba-style residual blocks: RMSNorm, in-projection split into x and gate z, causal depthwise conv1d, SiLU, input-dependent dt/B/C, selective scan written with cumsum, a -inf causal mask and exp, SiLU(z) gating and out-projection."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MambaMixer(nn.Module):
    def __init__(self, d_model, d_state, d_conv, expand):
        super().__init__()
        d_inner = expand * d_model
        self.dt_rank = math.ceil(d_model / 16)
        self.d_state = d_state
        self.in_proj = nn.Linear(d_model, 2 * d_inner, bias=False)
        self.conv1d = nn.Conv1d(d_inner, d_inner, d_conv, groups=d_inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(d_inner, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, d_inner)
        a = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(d_inner, 1)
        self.A_log = nn.Parameter(torch.log(a))
        self.D = nn.Parameter(torch.ones(d_inner))
        self.out_proj = nn.Linear(d_inner, d_model, bias=False)

    def selective_scan(self, u, dt, A, Bm, Cm):
        # u, dt: (B, L, D); A: (D, N); Bm, Cm: (B, L, N)
        l = u.shape[1]
        dA = torch.cumsum(dt.unsqueeze(-1) * A, dim=1)                  # (B, L, D, N)
        seg = dA.unsqueeze(2) - dA.unsqueeze(1)                          # (B, t, s, D, N)
        causal = torch.tril(torch.ones(l, l, dtype=torch.bool, device=u.device))
        seg = seg.masked_fill(~causal[None, :, :, None, None], float("-inf"))
        weights = torch.exp(seg)
        inputs = (dt * u).unsqueeze(-1) * Bm.unsqueeze(2)                # (B, s, D, N)
        h = (weights * inputs.unsqueeze(1)).sum(dim=2)                   # (B, t, D, N)
        return (h * Cm.unsqueeze(2)).sum(dim=-1) + u * self.D

    def forward(self, hidden):
        l = hidden.shape[1]
        x, z = self.in_proj(hidden).chunk(2, dim=-1)
        x = self.conv1d(x.transpose(1, 2))[..., :l].transpose(1, 2)
        x = F.silu(x)
        dt, Bm, Cm = torch.split(self.x_proj(x), [self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = F.softplus(self.dt_proj(dt))
        A = -torch.exp(self.A_log)
        y = self.selective_scan(x, dt, A, Bm, Cm)
        return self.out_proj(y * F.silu(z))


class Model(nn.Module):
    def __init__(self, d_model, n_layers, d_state, d_conv, expand):
        super().__init__()
        self.norms = nn.ModuleList([RMSNorm(d_model) for _ in range(n_layers)])
        self.mixers = nn.ModuleList([MambaMixer(d_model, d_state, d_conv, expand) for _ in range(n_layers)])
        self.norm_f = RMSNorm(d_model)

    def forward(self, x):
        for norm, mixer in zip(self.norms, self.mixers):
            x = x + mixer(norm(x))
        return self.norm_f(x)


batch_size = 4
seq_len = 32
d_model = 128
n_layers = 2
d_state = 16
d_conv = 4
expand = 2


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, n_layers, d_state, d_conv, expand]
