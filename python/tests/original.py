"""The original project's ParallelLN, re-stated as the reference the package
must match: composed PyTorch ops, with parameters of shape [1, C, 1, 1],
[1, 1, C] or [1, C] by `dim`."""

import torch
import torch.nn as nn
from torch.nn.parameter import Parameter


class OriginalParallelLN(nn.Module):
    def __init__(self, num_features, num_per_group, eps=1e-5, centering=True, affine=True,
                 dim=4, p=2):
        super().__init__()
        self.num_features, self.num_per_group = num_features, num_per_group
        self.eps, self.dim, self.affine, self.centering, self.p = eps, dim, affine, centering, p
        if affine:
            shape = {4: [1, num_features, 1, 1], 3: [1, 1, num_features], 2: [1, num_features]}[dim]
            self.weight = Parameter(torch.ones(*shape))
            self.bias = Parameter(torch.zeros(*shape))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        if self.dim == 4:
            x = x.permute(0, 2, 3, 1)
        size = x.size()
        x = x.reshape(-1, self.num_features // self.num_per_group, self.num_per_group)
        xc = x - x.mean(dim=2, keepdim=True) if self.centering else x
        stat = torch.mean(torch.abs(xc) ** self.p, dim=2, keepdim=True)
        xn = (xc * (1 / (stat + self.eps) ** (1 / self.p))).reshape(size)
        if self.dim == 4:
            xn = xn.permute(0, 3, 1, 2)
        if self.affine:
            xn = xn * self.weight + self.bias
        return xn
