# A LLaMA-style decoder block written the way Meta's reference code writes it: RMSNorm, rotary position
# embeddings through complex numbers (torch.polar in __init__, a complex buffer, view_as_complex in forward),
# causal attention through SDPA with grouped key/value heads, and a SwiGLU feed-forward.
import torch
import torch.nn as nn
import torch.nn.functional as F


def precompute_freqs_cis(head_dim, max_seq, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    t = torch.arange(max_seq, device=freqs.device).float()
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis, x):
    shape = [d if i == 1 or i == x.ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Model(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden, max_seq):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.attention_norm = RMSNorm(dim)
        self.ffn_norm = RMSNorm(dim)
        self.register_buffer("freqs_cis", precompute_freqs_cis(self.head_dim, max_seq), persistent=False)

    def forward(self, x):
        bsz, seqlen, _ = x.shape
        h = self.attention_norm(x)
        xq = self.wq(h).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(h).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(h).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, self.freqs_cis[:seqlen])
        rep = self.n_heads // self.n_kv_heads
        xk = xk.repeat_interleave(rep, dim=2)
        xv = xv.repeat_interleave(rep, dim=2)
        q, k, v = (t.transpose(1, 2) for t in (xq, xk, xv))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(out.transpose(1, 2).reshape(bsz, seqlen, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def get_inputs():
    return [torch.randn(2, 64, 256)]


def get_init_inputs():
    return [256, 8, 2, 688, 128]
