"""torchvision vit_b_16 built with weights=None (no download), head re-initialized (torchvision zero-inits it), batch 1 at 224x224 (needs torchvision >= 0.13)."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.net = torchvision.models.vit_b_16(weights=None, num_classes=num_classes)
        # torchvision initializes the classification head to zeros, which would make every output 0
        nn.init.normal_(self.net.heads.head.weight, std=0.02)
        nn.init.normal_(self.net.heads.head.bias, std=0.02)

    def forward(self, x):
        return self.net(x)


batch_size = 1
num_classes = 1000
image_size = 224


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes]
