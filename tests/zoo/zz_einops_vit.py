"""Small ViT written with einops.rearrange for patchify and head split/merge, pre-norm attention and GELU MLP, class token head (needs einops)."""
import torch
import torch.nn as nn
from einops import rearrange


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        attn = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * self.scale, dim=-1)
        out = rearrange(torch.matmul(attn, v), "b h n d -> b n (h d)")
        return self.to_out(out)


class Model(nn.Module):
    def __init__(self, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim):
        super().__init__()
        self.p = patch_size
        n = (image_size // patch_size) ** 2
        self.to_patch = nn.Sequential(nn.LayerNorm(3 * patch_size * patch_size), nn.Linear(3 * patch_size * patch_size, dim), nn.LayerNorm(dim))
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim))
        self.layers = nn.ModuleList()
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                nn.LayerNorm(dim), Attention(dim, heads),
                nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim)),
            ]))
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_classes))

    def forward(self, img):
        x = rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=self.p, p2=self.p)
        x = self.to_patch(x)
        cls = self.cls.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos
        for norm, attn, ff in self.layers:
            x = x + attn(norm(x))
            x = x + ff(x)
        return self.head(x[:, 0])


batch_size = 4
image_size = 64
patch_size = 8
num_classes = 100
dim = 192
depth = 4
heads = 6
mlp_dim = 384


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [image_size, patch_size, num_classes, dim, depth, heads, mlp_dim]
