"""torchvision densenet121 built with weights=None (no download), batch 2 at 224x224, BatchNorm statistics calibrated on one fixed random batch (needs torchvision >= 0.13)."""
import torch
import torch.nn as nn
import torchvision


def calibrate_batchnorm(net, image_size, seed=0):
    """Fill the BatchNorm running statistics from one fixed random batch, as if briefly trained:
    with fresh statistics (mean 0, var 1) eval-mode activations shrink toward 0 through the depth."""
    bns = [m for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    x = torch.randn(4, 3, image_size, image_size, generator=torch.Generator().manual_seed(seed))
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average: the statistics of this one batch
    net.train()
    with torch.no_grad():
        net(x)
    for m in bns:
        m.momentum = 0.1
    net.eval()


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.net = torchvision.models.densenet121(weights=None, num_classes=num_classes)
        calibrate_batchnorm(self.net, image_size)

    def forward(self, x):
        return self.net(x)


batch_size = 2
num_classes = 1000
image_size = 224


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_classes]
