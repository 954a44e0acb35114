"""torchvision convnext_tiny built with weights=None (no download), batch 1 at 224x224 (needs torchvision >= 0.13)."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.net = torchvision.models.convnext_tiny(weights=None, num_classes=num_classes)

    def forward(self, x):
        return self.net(x)


batch_size = 1
num_classes = 1000
image_size = 224


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes]
