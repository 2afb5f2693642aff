"""Drop-in replacements for the original ParallelLN module, over torch.ops.pln."""

import torch
import torch.nn as nn
from torch.nn.parameter import Parameter

# Layout name for the original module's `dim` argument.
_LAYOUT_OF_DIM = {2: "nc", 3: "ntc", 4: "nchw"}
# Shape of the affine parameters per layout (C on the feature axis), as the
# original module stores them: [1, C], [1, 1, C] and [1, C, 1, 1] for dim 2, 3, 4.
_PARAM_SHAPE = {
    "nc": lambda c: (1, c),
    "ntc": lambda c: (1, 1, c),
    "nchw": lambda c: (1, c, 1, 1),
    "nhwc": lambda c: (1, 1, 1, c),
    "ncl": lambda c: (1, c, 1),
}


def _resolve_layout(dim, layout):
    if layout is not None:
        name = str(layout).lower()
        if name not in _PARAM_SHAPE:
            raise ValueError(f"pln: unknown layout '{layout}'; expected one of nc, ntc, nchw, nhwc, ncl")
        return name
    if dim not in _LAYOUT_OF_DIM:
        raise ValueError(f"pln: dim must be 2 ([N, C]), 3 ([N, T, C]) or 4 ([N, C, H, W]), got {dim}")
    return _LAYOUT_OF_DIM[dim]


def _check_grouping(num_features, num_per_group):
    if num_features <= 0:
        raise ValueError(f"pln: num_features must be positive, got {num_features}")
    if num_per_group <= 0:
        raise ValueError(f"pln: num_per_group must be positive, got {num_per_group}")
    if num_features % num_per_group != 0:
        raise ValueError(
            f"pln: num_features ({num_features}) must be divisible by num_per_group ({num_per_group})"
        )


class ParallelLN(nn.Module):
    """Parallel Layer Normalization with the original module's constructor,
    attribute and parameter names and shapes, so its state_dict loads unchanged.

    `layout` ("nc", "ntc", "nchw", "nhwc" or "ncl") overrides `dim`, e.g. for
    channels-last data stored as [N, H, W, C].
    """

    def __init__(self, num_features, num_per_group, eps=1e-5, centering=True, affine=True,
                 dim=4, p=2, *args, layout=None, **kwargs):
        super().__init__()
        _check_grouping(num_features, num_per_group)
        self.num_features = num_features
        self.num_per_group = num_per_group
        self.eps = eps
        self.dim = dim
        self.affine = affine
        self.centering = centering
        self.p = p
        self.layout = _resolve_layout(dim, layout)
        if self.affine:
            self.shape = list(_PARAM_SHAPE[self.layout](num_features))
            self.weight = Parameter(torch.empty(*self.shape))
            self.bias = Parameter(torch.empty(*self.shape))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.affine:
            nn.init.ones_(self.weight)
            nn.init.zeros_(self.bias)

    def forward(self, x):
        return torch.ops.pln.parallel_ln(x, self.weight, self.bias, self.num_features,
                                         self.num_per_group, float(self.eps), bool(self.centering),
                                         self.layout, float(self.p))

    def extra_repr(self):
        return "{num_features}, {num_per_group}, affine={affine}, centering={centering}".format(
            **self.__dict__)


class PLS(ParallelLN):
    """Parallel layer scaling: ParallelLN without centering."""

    def __init__(self, num_features, num_per_group, eps=1e-5, affine=True, dim=4, p=2, *args,
                 layout=None, **kwargs):
        super().__init__(num_features, num_per_group, eps=eps, centering=False, affine=affine,
                         dim=dim, p=p, layout=layout)


class PQNorm(ParallelLN):
    """y = sign(xc)|xc|^(p/q) / (mean|xc|^p + eps)^(1/q) per group; p = q = 2 is ParallelLN."""

    def __init__(self, num_features, num_per_group, p=2.0, q=2.0, eps=1e-5, centering=True,
                 affine=True, dim=4, *args, layout=None, **kwargs):
        super().__init__(num_features, num_per_group, eps=eps, centering=centering,
                         affine=affine, dim=dim, p=p, layout=layout)
        self.q = q

    def forward(self, x):
        return torch.ops.pln.pq_norm(x, self.weight, self.bias, self.num_features,
                                     self.num_per_group, float(self.p), float(self.q),
                                     float(self.eps), bool(self.centering), self.layout)

    def extra_repr(self):
        return super().extra_repr() + f", p={self.p}, q={self.q}"
