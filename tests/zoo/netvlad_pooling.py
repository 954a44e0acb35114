"""NetVLAD: a small conv backbone, 1x1-conv soft-assignment with softmax over clusters, residual aggregation (assign^T x - assign_sum * centroids) via bmm, intra-normalization and a final F.normalize."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, num_clusters, dim, alpha):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
            nn.Conv2d(64, dim, 3, stride=2, padding=1), nn.BatchNorm2d(dim), nn.ReLU(inplace=True),
        )
        self.centroids = nn.Parameter(torch.rand(num_clusters, dim))
        self.assign = nn.Conv2d(dim, num_clusters, 1, bias=True)
        with torch.no_grad():
            self.assign.weight.copy_((2.0 * alpha * self.centroids).unsqueeze(-1).unsqueeze(-1))
            self.assign.bias.copy_(-alpha * self.centroids.norm(dim=1))

    def forward(self, img):
        x = F.normalize(self.backbone(img), p=2, dim=1)             # (B, D, H, W)
        b, d = x.shape[:2]
        soft = torch.softmax(self.assign(x).view(b, -1, x.shape[2] * x.shape[3]), dim=1)  # (B, K, N)
        flat = x.view(b, d, -1)                                      # (B, D, N)
        vlad = torch.bmm(soft, flat.transpose(1, 2))                 # (B, K, D)
        vlad = vlad - soft.sum(dim=2).unsqueeze(-1) * self.centroids.unsqueeze(0)
        vlad = F.normalize(vlad, p=2, dim=2)
        return F.normalize(vlad.reshape(b, -1), p=2, dim=1)


batch_size = 8
num_clusters = 32
dim = 128
alpha = 10.0
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [num_clusters, dim, alpha]
