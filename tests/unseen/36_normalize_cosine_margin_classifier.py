"""Composes F.normalize of features and weights, a linear (cosine logits), a one-hot from int64 labels via F.one_hot, a margin and a scale."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features, num_classes, scale, margin):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_classes, in_features))
        self.num_classes = num_classes
        self.scale = scale
        self.margin = margin

    def forward(self, x, labels):
        cos = F.linear(F.normalize(x, dim=1), F.normalize(self.weight, dim=1))
        onehot = F.one_hot(labels, self.num_classes).to(cos.dtype)
        return self.scale * (cos - self.margin * onehot)


batch_size = 128
in_features = 512
num_classes = 4096
scale = 16.0
margin = 0.35


def get_inputs():
    return [torch.randn(batch_size, in_features), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return [in_features, num_classes, scale, margin]
