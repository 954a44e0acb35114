"""Composes F.embedding_bag(mode='mean') over 2-D int64 ids with a parameter table, and a sigmoid gate from a dense linear branch."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, vocab_size, dim, dense_features):
        super().__init__()
        self.table = nn.Parameter(torch.randn(vocab_size, dim))
        self.gate = nn.Linear(dense_features, dim)

    def forward(self, ids, dense):
        pooled = F.embedding_bag(ids, self.table, mode="mean")
        return pooled * torch.sigmoid(self.gate(dense)) + pooled


batch_size = 256
bag_len = 40
vocab_size = 20000
dim = 512
dense_features = 128


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, bag_len)), torch.randn(batch_size, dense_features)]


def get_init_inputs():
    return [vocab_size, dim, dense_features]
