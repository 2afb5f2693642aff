"""Modules over torch.ops.pln: drop-in replacements for the original ParallelLN
module (same positional arguments, and its state_dict loads) that also take
``nn.LayerNorm``'s keywords (``elementwise_affine=``, ``bias=``, ``device=``,
``dtype=``)."""

import numbers
from typing import Any, Dict, List, Optional

import torch
import torch.nn as nn
from torch import Tensor
from torch.nn.parameter import Parameter

from . import functional as F

__all__ = ["ParallelLN", "PLS", "PQNorm", "GatedNorm", "PerHeadNorm"]

# Layout name for the original module's `dim` argument.
_LAYOUT_OF_DIM = {2: "nc", 3: "ntc", 4: "nchw"}
# Features on the last axis: such modules take any leading rank, as nn.LayerNorm does.
_FEATURES_LAST = ("nc", "ntc", "nhwc", "features_last")


def _resolve_layout(dim: int, layout: Optional[str]) -> str:
    if layout is not None:
        name = str(layout).lower()
        if name not in F.LAYOUTS:
            raise ValueError(f"pln: unknown layout '{layout}'; expected one of {', '.join(F.LAYOUTS)}")
        return name
    if dim not in _LAYOUT_OF_DIM:
        raise ValueError(f"pln: dim must be 2 ([N, C]), 3 ([N, T, C]) or 4 ([N, C, H, W]), got {dim}")
    return _LAYOUT_OF_DIM[dim]


def _check_grouping(num_features: int, num_per_group: int) -> None:
    for name, value in (("num_features", num_features), ("num_per_group", num_per_group)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"pln: {name} must be an int, got {type(value).__name__}")
    if num_features <= 0:
        raise ValueError(f"pln: num_features must be positive, got {num_features}")
    if num_per_group <= 0:
        raise ValueError(f"pln: num_per_group must be positive, got {num_per_group}")
    if num_features % num_per_group != 0:
        raise ValueError(
            f"pln: num_features ({num_features}) must be divisible by num_per_group ({num_per_group})"
        )


def _resolve_affine(affine: bool, elementwise_affine: Optional[bool]) -> bool:
    if elementwise_affine is None:
        return bool(affine)
    if not affine and elementwise_affine:
        raise ValueError("pln: affine=False and elementwise_affine=True contradict each other; "
                         "give one of them (elementwise_affine is nn.LayerNorm's name for affine)")
    return bool(elementwise_affine)


class _ParallelNorm(nn.Module):
    """What ParallelLN, PLS and PQNorm share: grouping, layout, [C]-shaped
    affine parameters, the load hook for the original module's broadcast-shaped
    parameters, and the repr."""

    num_features: int
    num_per_group: int
    eps: float
    centering: bool
    affine: bool
    elementwise_affine: bool
    dim: int
    p: float
    layout: str
    # Constructor defaults the repr leaves out.
    _repr_defaults: Dict[str, Any] = {"centering": True, "p": 2.0, "elementwise_affine": True,
                                      "bias": True}

    def __init__(self, num_features: int, num_per_group: int, *, eps: float, centering: bool,
                 affine: bool, elementwise_affine: Optional[bool], bias: bool, dim: int, p: float,
                 layout: Optional[str], device: Any = None, dtype: Optional[torch.dtype] = None) -> None:
        super().__init__()
        _check_grouping(num_features, num_per_group)
        self.num_features = num_features = int(num_features)
        self.num_per_group = num_per_group = int(num_per_group)
        self.eps = float(eps)
        self.dim = dim
        self.centering = centering
        self.p = float(p)
        self.layout = _resolve_layout(dim, layout)
        # A plain attribute rather than a property over a module-level tuple, so
        # that torch.jit.script compiles forward.
        self._functional_layout: str = "features_last" if self.layout in _FEATURES_LAST else self.layout
        self.affine = self.elementwise_affine = _resolve_affine(affine, elementwise_affine)
        factory = {"device": device, "dtype": dtype}
        if self.affine:
            self.weight = Parameter(torch.empty(num_features, **factory))
            if bias:
                self.bias = Parameter(torch.empty(num_features, **factory))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Sets ``weight`` to ones and ``bias`` to zeros."""
        if self.weight is not None:
            nn.init.ones_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def _op_forward(self, input: Tensor, q: Optional[float]) -> Tensor:
        """The operator call alone, for TorchScript (torch.jit.script), which
        cannot compile the functional API's checks and dispatch."""
        x = input
        layout = self.layout
        rank = input.dim()
        if layout == "features_last":
            layout = "ntc" if rank == 3 else "nc"
            if rank > 3:
                x = input.reshape(-1, input.shape[-1])
        elif layout == "features_first":
            layout = "nc" if rank == 2 else ("ncl" if rank == 3 else "nchw")
            if rank > 4:
                x = input.reshape(input.shape[0], input.shape[1], -1)
                layout = "ncl"
        if q is None:
            y = torch.ops.pln.parallel_ln(x, self.weight, self.bias, self.num_features, self.num_per_group,
                                          self.eps, self.centering, layout, self.p)
        else:
            y = torch.ops.pln.pq_norm(x, self.weight, self.bias, self.num_features, self.num_per_group,
                                      self.p, q, self.eps, self.centering, layout)
        return y.reshape(input.shape)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self._zero_missing_bias(state_dict, prefix)
        # The original module stores weight and bias broadcast-shaped ([1, C, 1, 1],
        # [1, 1, C], [1, C]); this one stores [C], as nn.LayerNorm does.
        for name in ("weight", "bias"):
            key = prefix + name
            param = getattr(self, name)
            value = state_dict.get(key)
            if param is None or not isinstance(value, Tensor) or value.shape == param.shape:
                continue
            if value.numel() == self.num_features and sum(s != 1 for s in value.shape) <= 1:
                state_dict[key] = value.reshape(param.shape)
            else:
                error_msgs.append(
                    f"pln: '{key}' has shape {tuple(value.shape)}, {value.numel()} values, but this "
                    f"{type(self).__name__} has num_features={self.num_features}: a state_dict of "
                    f"another width")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def _zero_missing_bias(self, state_dict, prefix) -> None:
        # A state dict with a weight and no bias is a norm's without a bias (nn.RMSNorm,
        # transformers' RMS norms, nn.LayerNorm(bias=False)): a zero bias computes what it did.
        if self.bias is not None and prefix + "weight" in state_dict and prefix + "bias" not in state_dict:
            state_dict[prefix + "bias"] = torch.zeros_like(self.bias)

    def _repr_values(self) -> Dict[str, Any]:
        return {"centering": self.centering, "p": float(self.p),
                "elementwise_affine": self.elementwise_affine,
                "bias": self.bias is not None or not self.elementwise_affine}

    def extra_repr(self) -> str:
        parts: List[str] = [str(self.num_features), str(self.num_per_group), f"eps={self.eps}",
                            f"layout={self.layout}"]
        for name, value in self._repr_values().items():
            if self._repr_defaults.get(name) != value:
                parts.append(f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}")
        return ", ".join(parts)


class ParallelLN(_ParallelNorm):
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

    The positional arguments are the original module's, and its ``state_dict``
    (parameters shaped ``[1, C, 1, 1]``, ``[1, 1, C]`` or ``[1, C]``) loads;
    the parameters here have shape ``[C]``, as ``nn.LayerNorm``'s.

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
        layout: overrides ``dim``: ``"features_last"``, ``"nc"``, ``"ntc"`` or
            ``"nhwc"`` (features on the last axis, any leading rank),
            ``"nchw"``, ``"ncl"`` or ``"features_first"`` (``[N, C, ...]``).
            The layout is declared, never guessed.
        elementwise_affine: ``nn.LayerNorm``'s name for ``affine``.
        bias: with ``affine``, also learn ``bias``. Default: ``True``.
        device, dtype: of the parameters.

    Shape:
        - Input: as the layout says, with ``num_features`` on its feature axis.
        - Output: same shape as the input (channels-last memory stays channels-last).

    Examples::

        >>> norm = pln.ParallelLN(64, 8)                  # [N, 64, H, W], groups of 8
        >>> y = norm(torch.randn(2, 64, 5, 5))
        >>> tokens = pln.ParallelLN(384, 8, dim=3)        # [..., 384]
    """

    def __init__(self, num_features: int, num_per_group: int, eps: float = 1e-5,
                 centering: bool = True, affine: bool = True, dim: int = 4, p: float = 2,
                 *, layout: Optional[str] = None, elementwise_affine: Optional[bool] = None,
                 bias: bool = True, device: Any = None, dtype: Optional[torch.dtype] = None) -> None:
        super().__init__(num_features, num_per_group, eps=eps, centering=centering, affine=affine,
                         elementwise_affine=elementwise_affine, bias=bias, dim=dim, p=p,
                         layout=layout, device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return self._op_forward(input, None)
        return F._run(input, self.num_per_group, self.weight, self.bias, self.eps, self.centering,
                      self.p, None, self._functional_layout, self.num_features)


class PLS(ParallelLN):
    r"""Parallel layer scaling: :class:`ParallelLN` without centering,
    :math:`y = x / (\mathrm{E}[|x|^p] + \epsilon)^{1/p} * \gamma + \beta` per group
    (RMSNorm within each group for ``p = 2``).

    Args are those of :class:`ParallelLN`, less ``centering``.
    """

    _repr_defaults = dict(_ParallelNorm._repr_defaults, centering=False)

    def __init__(self, num_features: int, num_per_group: int, eps: float = 1e-5,
                 affine: bool = True, dim: int = 4, p: float = 2,
                 *, layout: Optional[str] = None, elementwise_affine: Optional[bool] = None,
                 bias: bool = True, device: Any = None, dtype: Optional[torch.dtype] = None) -> None:
        super().__init__(num_features, num_per_group, eps=eps, centering=False, affine=affine,
                         dim=dim, p=p, layout=layout, elementwise_affine=elementwise_affine,
                         bias=bias, device=device, dtype=dtype)


class PQNorm(_ParallelNorm):
    r"""PQNorm over groups of ``num_per_group`` features:

    .. math::
        y = \frac{\mathrm{sign}(x_c)\,|x_c|^{p/q}}{(\mathrm{E}[|x_c|^p] + \epsilon)^{1/q}}
            * \gamma + \beta, \qquad x_c = x - \mathrm{E}[x]

    ``p = q = 2`` is :class:`ParallelLN` (or :class:`PLS` without centering).

    Args:
        num_features, num_per_group: as for :class:`ParallelLN`.
        p: exponent of the group statistic and numerator. Default: ``2``.
        q: root of the statistic. Default: ``2``.
        eps, centering, affine, dim, layout, elementwise_affine, bias, device,
        dtype: as for :class:`ParallelLN`.
    """

    q: float
    _repr_defaults = dict(_ParallelNorm._repr_defaults, q=2.0)

    def __init__(self, num_features: int, num_per_group: int, p: float = 2.0, q: float = 2.0,
                 eps: float = 1e-5, centering: bool = True, affine: bool = True, dim: int = 4,
                 *, layout: Optional[str] = None, elementwise_affine: Optional[bool] = None,
                 bias: bool = True, device: Any = None, dtype: Optional[torch.dtype] = None) -> None:
        super().__init__(num_features, num_per_group, eps=eps, centering=centering, affine=affine,
                         elementwise_affine=elementwise_affine, bias=bias, dim=dim, p=p,
                         layout=layout, device=device, dtype=dtype)
        self.q = float(q)

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return self._op_forward(input, self.q)
        return F._run(input, self.num_per_group, self.weight, self.bias, self.eps, self.centering,
                      self.p, self.q, self._functional_layout, self.num_features)

    def _repr_values(self) -> Dict[str, Any]:
        return dict(super()._repr_values(), q=float(self.q))


class GatedNorm(_ParallelNorm):
    r"""The gated norm of Mamba-2 and the Gated DeltaNet hybrids:
    :func:`pln.functional.gated_norm` over the last axis, in groups of
    ``num_per_group`` features. ``forward(input, gate=None)``: without a gate,
    the norm alone (:class:`PLS`, or :class:`ParallelLN` with ``centering``).

    Transformers' ``MambaRMSNormGated(hidden_size, group_size, eps)`` is
    ``GatedNorm(hidden_size, group_size, eps)``; ``Qwen3NextRMSNormGated(head_dim)``
    is ``GatedNorm(head_dim, head_dim, 1e-6, gate_position="after")``. Their
    ``state_dict`` (``weight``) loads.

    Args:
        num_features: features on the last axis.
        num_per_group: features per group; must divide ``num_features``.
        eps: added to the group statistic before the root. Default: ``1e-5``.
        centering: subtract each group's mean. Default: ``False`` (RMS norm per group).
        gate_position: ``"before"`` the norm (default) or ``"after"`` it.
        activation: of the gate, ``"silu"`` (default) or ``"sigmoid"``.
        elementwise_affine: learn a per-feature ``weight``. Default: ``True``.
        bias: also learn a ``bias``. Default: ``False``, as the models' classes.
        device, dtype: of the parameters.
    """

    gate_position: str
    activation: str
    _repr_defaults = dict(_ParallelNorm._repr_defaults, centering=False, bias=False, gate_position="before",
                          activation="silu")

    def __init__(self, num_features: int, num_per_group: int, eps: float = 1e-5, *, centering: bool = False,
                 gate_position: str = "before", activation: str = "silu", elementwise_affine: bool = True,
                 bias: bool = False, device: Any = None, dtype: Optional[torch.dtype] = None) -> None:
        if gate_position not in ("before", "after"):
            raise ValueError(f"pln: gate_position must be 'before' or 'after', got {gate_position!r}")
        if activation not in ("silu", "sigmoid"):
            raise ValueError(f"pln: activation must be 'silu' or 'sigmoid', got {activation!r}")
        super().__init__(num_features, num_per_group, eps=eps, centering=centering, affine=elementwise_affine,
                         elementwise_affine=None, bias=bias, dim=3, p=2.0, layout="features_last", device=device,
                         dtype=dtype)
        self.gate_position = gate_position
        self.activation = activation

    @property
    def variance_epsilon(self) -> float:
        """``eps``, under the name transformers' classes give it (their mixers read it)."""
        return self.eps

    def forward(self, input: Tensor, gate: Optional[Tensor] = None) -> Tensor:
        if gate is None:
            return F._run(input, self.num_per_group, self.weight, self.bias, self.eps, self.centering, 2.0, None,
                          "features_last", self.num_features)
        if input.shape[-1] != self.num_features:
            raise RuntimeError(f"pln: expected {self.num_features} features on the last axis of the input, "
                               f"got {input.shape[-1]} (input shape {tuple(input.shape)})")
        return F.gated_norm(input, gate, self.num_per_group, self.weight, self.bias, self.eps,
                            centering=self.centering, gate_position=self.gate_position, activation=self.activation)

    def _repr_values(self) -> Dict[str, Any]:
        return dict(super()._repr_values(), bias=self.bias is not None, gate_position=self.gate_position,
                    activation=self.activation)


class PerHeadNorm(_ParallelNorm):
    r"""Parallel Layer Normalization over the last two axes of ``[..., heads, head_dim]``
    taken as one axis of ``heads * head_dim`` features, with ``weight`` and ``bias``
    shaped ``[heads, head_dim]``. With ``num_per_group = head_dim`` it is a norm
    per head, as Cohere's query and key norms (``CohereLayerNorm(hidden_size=(heads,
    head_dim))``), whose ``state_dict`` loads; a smaller group splits each head.

    Args:
        num_heads, head_dim: the last two axes of the input.
        num_per_group: features per group; must divide ``num_heads * head_dim``.
        eps: added to the group statistic before the root. Default: ``1e-5``.
        centering: subtract each group's mean (``False``: RMS norm per group). Default: ``True``.
        p: exponent of the group statistic. Default: ``2``.
        elementwise_affine, bias, device, dtype: as for :class:`ParallelLN`.
    """

    num_heads: int
    head_dim: int

    def __init__(self, num_heads: int, head_dim: int, num_per_group: int, eps: float = 1e-5, *,
                 centering: bool = True, p: float = 2, elementwise_affine: bool = True, bias: bool = True,
                 device: Any = None, dtype: Optional[torch.dtype] = None) -> None:
        super().__init__(num_heads * head_dim, num_per_group, eps=eps, centering=centering,
                         affine=elementwise_affine, elementwise_affine=None, bias=bias, dim=3, p=p,
                         layout="features_last", device=device, dtype=dtype)
        self.num_heads, self.head_dim = int(num_heads), int(head_dim)
        # Shaped as the per-head norm's, so that its state_dict loads and this one saves as it.
        for name in ("weight", "bias"):
            param = getattr(self, name)
            if param is not None:
                setattr(self, name, Parameter(param.detach().reshape(self.num_heads, self.head_dim)))

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() < 2 or input.shape[-2:] != (self.num_heads, self.head_dim):
            raise RuntimeError(f"pln: expected an input of shape [..., {self.num_heads}, {self.head_dim}] "
                               f"(heads, head_dim), got {tuple(input.shape)}")
        flat = input.flatten(-2)
        weight = None if self.weight is None else self.weight.reshape(-1)
        bias = None if self.bias is None else self.bias.reshape(-1)
        y = F._run(flat, self.num_per_group, weight, bias, self.eps, self.centering, self.p, None,
                   "features_last", self.num_features)
        return y.reshape(input.shape)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # Parameters are stored in the per-head norm's own shape: no reshaping hook.
        self._zero_missing_bias(state_dict, prefix)
        nn.Module._load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                                        unexpected_keys, error_msgs)

    def extra_repr(self) -> str:
        # (heads, head_dim) in place of num_features; the layout is always features last.
        rest = [part for part in super().extra_repr().split(", ")[1:] if not part.startswith("layout=")]
        return ", ".join([str(self.num_heads), str(self.head_dim)] + rest)
