"""Drop-in replacements for the original ParallelLN module, over torch.ops.pln."""

from typing import Optional

import torch
import torch.nn as nn
from torch import Tensor
from torch.nn.parameter import Parameter

__all__ = ["ParallelLN", "PLS", "PQNorm"]

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


def _resolve_layout(dim: int, layout: Optional[str]) -> str:
    if layout is not None:
        name = str(layout).lower()
        if name not in _PARAM_SHAPE:
            raise ValueError(f"pln: unknown layout '{layout}'; expected one of nc, ntc, nchw, nhwc, ncl")
        return name
    if dim not in _LAYOUT_OF_DIM:
        raise ValueError(f"pln: dim must be 2 ([N, C]), 3 ([N, T, C]) or 4 ([N, C, H, W]), got {dim}")
    return _LAYOUT_OF_DIM[dim]


def _check_grouping(num_features: int, num_per_group: int) -> None:
    if num_features <= 0:
        raise ValueError(f"pln: num_features must be positive, got {num_features}")
    if num_per_group <= 0:
        raise ValueError(f"pln: num_per_group must be positive, got {num_per_group}")
    if num_features % num_per_group != 0:
        raise ValueError(
            f"pln: num_features ({num_features}) must be divisible by num_per_group ({num_per_group})"
        )


class ParallelLN(nn.Module):
    r"""Applies Parallel Layer Normalization: Layer Normalization over each
    group of ``num_per_group`` consecutive features, at every position.

    For each group :math:`x_1, \dots, x_g` of one position (a row, a token, a pixel):

    .. math::
        y = \frac{x - \mathrm{E}[x]}{(\mathrm{E}[|x - \mathrm{E}[x]|^p] + \epsilon)^{1/p}}
            * \gamma + \beta

    where :math:`\gamma` and :math:`\beta` hold one value per feature. ``p = 2``
    is the paper's operator; ``num_per_group = num_features`` is plain Layer
    Normalization over the features. Unlike GroupNorm, nothing is pooled over
    positions.

    The constructor, attributes and parameter shapes are those of the original
    module, so its ``state_dict`` loads unchanged.

    Args:
        num_features: number of features :math:`C` on the feature axis.
        num_per_group: features per group :math:`g`; must divide ``num_features``.
        eps: added to the group statistic before the root. Default: ``1e-5``.
        centering: subtract each group's mean; ``False`` gives parallel layer
            scaling (:class:`PLS`). Default: ``True``.
        affine: learnable per-feature ``weight`` (ones) and ``bias`` (zeros).
            Default: ``True``.
        dim: where the features are, as in the original module: ``2`` for
            ``[N, C]``, ``3`` for ``[N, T, C]``, ``4`` for ``[N, C, H, W]``.
            Default: ``4``.
        p: exponent of the group statistic. Default: ``2``.
        layout: overrides ``dim``: one of ``"nc"``, ``"ntc"``, ``"nchw"``,
            ``"nhwc"`` (channels-last data stored as ``[N, H, W, C]``) or
            ``"ncl"`` (``[N, C, L]``). The layout is declared, never guessed.

    Shape:
        - Input: as the layout says, with ``num_features`` on its feature axis.
        - Output: same shape as the input (channels-last memory stays channels-last).

    Examples::

        >>> norm = pln.ParallelLN(64, 8)                  # [N, 64, H, W], groups of 8
        >>> y = norm(torch.randn(2, 64, 5, 5))
        >>> tokens = pln.ParallelLN(384, 8, dim=3)        # [N, T, 384]
    """

    num_features: int
    num_per_group: int
    eps: float
    centering: bool
    affine: bool
    dim: int
    p: float
    layout: str

    def __init__(self, num_features: int, num_per_group: int, eps: float = 1e-5,
                 centering: bool = True, affine: bool = True, dim: int = 4, p: float = 2,
                 *, layout: Optional[str] = None) -> None:
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

    def reset_parameters(self) -> None:
        """Sets ``weight`` to ones and ``bias`` to zeros."""
        if self.affine:
            nn.init.ones_(self.weight)
            nn.init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return torch.ops.pln.parallel_ln(input, self.weight, self.bias, self.num_features,
                                         self.num_per_group, float(self.eps), bool(self.centering),
                                         self.layout, float(self.p))

    def extra_repr(self) -> str:
        return (f"{self.num_features}, {self.num_per_group}, eps={self.eps}, affine={self.affine}, "
                f"centering={self.centering}, layout={self.layout}")


class PLS(ParallelLN):
    r"""Parallel layer scaling: :class:`ParallelLN` without centering,
    :math:`y = x / (\mathrm{E}[|x|^p] + \epsilon)^{1/p} * \gamma + \beta` per group.

    Args are those of :class:`ParallelLN`, less ``centering``.
    """

    def __init__(self, num_features: int, num_per_group: int, eps: float = 1e-5,
                 affine: bool = True, dim: int = 4, p: float = 2,
                 *, layout: Optional[str] = None) -> None:
        super().__init__(num_features, num_per_group, eps=eps, centering=False, affine=affine,
                         dim=dim, p=p, layout=layout)


class PQNorm(ParallelLN):
    r"""PQNorm over groups of ``num_per_group`` features:

    .. math::
        y = \frac{\mathrm{sign}(x_c)\,|x_c|^{p/q}}{(\mathrm{E}[|x_c|^p] + \epsilon)^{1/q}}
            * \gamma + \beta, \qquad x_c = x - \mathrm{E}[x]

    ``p = q = 2`` is :class:`ParallelLN` (or :class:`PLS` without centering).

    Args:
        num_features, num_per_group: as for :class:`ParallelLN`.
        p: exponent of the group statistic and numerator. Default: ``2``.
        q: root of the statistic. Default: ``2``.
        eps, centering, affine, dim, layout: as for :class:`ParallelLN`.
    """

    q: float

    def __init__(self, num_features: int, num_per_group: int, p: float = 2.0, q: float = 2.0,
                 eps: float = 1e-5, centering: bool = True, affine: bool = True, dim: int = 4,
                 *, layout: Optional[str] = None) -> None:
        super().__init__(num_features, num_per_group, eps=eps, centering=centering,
                         affine=affine, dim=dim, p=p, layout=layout)
        self.q = q

    def forward(self, input: Tensor) -> Tensor:
        return torch.ops.pln.pq_norm(input, self.weight, self.bias, self.num_features,
                                     self.num_per_group, float(self.p), float(self.q),
                                     float(self.eps), bool(self.centering), self.layout)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", p={self.p}, q={self.q}"
