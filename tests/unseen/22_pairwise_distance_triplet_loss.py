"""Composes a shared linear embedding, F.normalize, F.pairwise_distance for two pairs, a margin and clamp (per-sample triplet loss)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features, embed_dim, margin):
        super().__init__()
        self.embed = nn.Linear(in_features, embed_dim)
        self.margin = margin

    def forward(self, anchor, positive, negative):
        a = F.normalize(self.embed(anchor), dim=1)
        p = F.normalize(self.embed(positive), dim=1)
        n = F.normalize(self.embed(negative), dim=1)
        d_ap = F.pairwise_distance(a, p)
        d_an = F.pairwise_distance(a, n)
        return torch.clamp(d_ap - d_an + self.margin, min=0.0)


batch_size = 4096
in_features = 256
embed_dim = 128
margin = 0.1


def get_inputs():
    return [torch.randn(batch_size, in_features) for _ in range(3)]


def get_init_inputs():
    return [in_features, embed_dim, margin]
