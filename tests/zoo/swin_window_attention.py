"""Swin-style transformer: patch embedding, window partition/reverse via view/permute, shifted windows via torch.roll with an attention mask, relative position bias table indexed by a registered buffer, patch merging and a head."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws * ws, c)


def window_reverse(windows, ws, h, w):
    b = windows.shape[0] // ((h // ws) * (w // ws))
    x = windows.view(b, h // ws, w // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(b, h, w, -1)


class WindowAttention(nn.Module):
    def __init__(self, dim, ws, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.bias_table = nn.Parameter(torch.randn((2 * ws - 1) * (2 * ws - 1), heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += ws - 1
        rel[:, :, 1] += ws - 1
        rel[:, :, 0] *= 2 * ws - 1
        self.register_buffer("rel_index", rel.sum(-1))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask):
        bw, n, c = x.shape
        qkv = self.qkv(x).reshape(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.bias_table[self.rel_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attn = attn + bias.unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(bw // nw, nw, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.heads, n, n)
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(bw, n, c))


class SwinBlock(nn.Module):
    def __init__(self, dim, resolution, heads, ws, shift):
        super().__init__()
        self.ws, self.shift, self.res = ws, shift, resolution
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, ws, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        if shift > 0:
            h = w = resolution
            img_mask = torch.zeros(1, h, w, 1)
            cnt = 0
            for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                    img_mask[:, hs, wsl, :] = cnt
                    cnt += 1
            mw = window_partition(img_mask, ws).squeeze(-1)
            mask = mw.unsqueeze(1) - mw.unsqueeze(2)
            mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        else:
            mask = None
        self.register_buffer("attn_mask", mask)

    def forward(self, x):
        b, l, c = x.shape
        h = w = self.res
        shortcut = x
        x = self.norm1(x).view(b, h, w, c)
        if self.shift > 0:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        windows = self.attn(window_partition(x, self.ws), self.attn_mask)
        x = window_reverse(windows, self.ws, h, w)
        if self.shift > 0:
            x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + x.view(b, l, c)
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim, resolution):
        super().__init__()
        self.res = resolution
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        b, l, c = x.shape
        x = x.view(b, self.res, self.res, c)
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], dim=-1)
        return self.reduction(self.norm(x.view(b, -1, 4 * c)))


class Model(nn.Module):
    def __init__(self, image_size, patch_size, num_classes, dim, depths, heads, window_size):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch_size, stride=patch_size)
        self.embed_norm = nn.LayerNorm(dim)
        res = image_size // patch_size
        layers = []
        for i, (d, h) in enumerate(zip(depths, heads)):
            for j in range(d):
                shift = 0 if (j % 2 == 0 or res <= window_size) else window_size // 2
                layers.append(SwinBlock(dim, res, h, min(window_size, res), shift))
            if i < len(depths) - 1:
                layers.append(PatchMerging(dim, res))
                dim *= 2
                res //= 2
        self.layers = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = self.layers(self.embed_norm(x))
        return self.head(self.norm(x).mean(dim=1))


batch_size = 4
image_size = 64
patch_size = 2
num_classes = 100
dim = 48
depths = [2, 2, 2]
heads = [3, 6, 12]
window_size = 4


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [image_size, patch_size, num_classes, dim, depths, heads, window_size]
