"""Composes nn.EmbeddingBag(mode='sum') over flat int64 ids with offsets, a linear layer and relu."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab_size, dim, out_features):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab_size, dim, mode="sum")
        self.fc = nn.Linear(dim, out_features)

    def forward(self, ids, offsets):
        return torch.relu(self.fc(self.bag(ids, offsets)))


batch_size = 128
total_ids = 8192
vocab_size = 50000
dim = 512
out_features = 2048


def get_inputs():
    ids = torch.randint(0, vocab_size, (total_ids,))
    cuts = torch.sort(torch.randperm(total_ids - 1)[: batch_size - 1] + 1).values
    offsets = torch.cat([torch.tensor([0], dtype=torch.long), cuts])
    return [ids, offsets]


def get_init_inputs():
    return [vocab_size, dim, out_features]
