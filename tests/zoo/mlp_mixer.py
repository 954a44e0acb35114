"""MLP-Mixer: conv patch embedding, mixer layers with token-mixing MLP (LayerNorm, transpose, two linears with GELU) and channel-mixing MLP, global average pool over tokens and a head."""
import torch
import torch.nn as nn


class MlpBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class MixerLayer(nn.Module):
    def __init__(self, num_tokens, dim, token_hidden, channel_hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mlp = MlpBlock(num_tokens, token_hidden)
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mlp = MlpBlock(dim, channel_hidden)

    def forward(self, x):
        y = self.norm1(x).transpose(1, 2)
        x = x + self.token_mlp(y).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class Model(nn.Module):
    def __init__(self, image_size, patch_size, num_classes, dim, depth, token_hidden, channel_hidden):
        super().__init__()
        num_tokens = (image_size // patch_size) ** 2
        self.stem = nn.Conv2d(3, dim, patch_size, stride=patch_size)
        self.layers = nn.Sequential(*[MixerLayer(num_tokens, dim, token_hidden, channel_hidden) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        x = self.norm(self.layers(x))
        return self.head(x.mean(dim=1))


batch_size = 8
image_size = 64
patch_size = 8
num_classes = 100
dim = 256
depth = 6
token_hidden = 128
channel_hidden = 1024


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [image_size, patch_size, num_classes, dim, depth, token_hidden, channel_hidden]
