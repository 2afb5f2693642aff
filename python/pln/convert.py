"""pln.convert: put Parallel Layer Normalization into an existing model.

    changes = pln.convert(model, num_per_group=8)

replaces, in place, every ``nn.LayerNorm`` by a :class:`pln.ParallelLN` and
every ``nn.RMSNorm`` by a :class:`pln.PLS` over the same features, with the
weights copied, and returns the list of what it changed.
"""

import numbers
from typing import Callable, Dict, List, NamedTuple, Optional, Set, Tuple, Type, Union

import torch
import torch.nn as nn

from .modules import PLS, ParallelLN, _ParallelNorm

__all__ = ["convert", "Change", "ConversionError"]

GroupSize = Union[int, Callable[[str, int], int]]


class ConversionError(ValueError):
    """A model pln.convert refuses; nothing in it was changed."""


class Change(NamedTuple):
    """One replaced module: its qualified name, the module it was and the one it is now."""
    name: str
    old: nn.Module
    new: nn.Module


# LayerNorm-style modules of other libraries whose layout is known, by
# qualified class name: (layout, whether the statistic is centred).
# timm's LayerNorm2d (ConvNeXt) normalises channels-first [N, C, H, W]
# per pixel; timm's LayerNorm is nn.LayerNorm with a faster forward.
_KNOWN: Dict[str, str] = {
    "timm.layers.norm.LayerNorm": "features_last",
    "timm.layers.norm.LayerNorm2d": "nchw",
    "timm.layers.norm.LayerNormFp32": "features_last",
    "timm.models.layers.norm.LayerNorm": "features_last",
    "timm.models.layers.norm.LayerNorm2d": "nchw",
}

_REFUSED = {
    nn.GroupNorm: "it normalises each group of channels over all positions (H, W, ...) together, "
                  "while PLN normalises every position separately: no PLN module computes it",
}


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _rms_norm_class() -> Optional[type]:
    return getattr(nn, "RMSNorm", None)  # torch 2.4 and later


def _layer_norm_layout(name: str, module: nn.Module, layouts: Dict[type, str]) -> Optional[str]:
    """The layout of a LayerNorm-style module, or None where it is not one;
    raises where it is one whose layout is unknown."""
    cls = type(module)
    for known_cls, layout in layouts.items():
        if isinstance(module, known_cls):
            return layout
    if _qualname(cls) in _KNOWN:
        return _KNOWN[_qualname(cls)]
    if cls is nn.LayerNorm:
        return "features_last"
    if isinstance(module, nn.LayerNorm):
        if cls.forward is nn.LayerNorm.forward:
            return "features_last"
        raise ConversionError(
            f"pln.convert: '{name}' is {_qualname(cls)}, a subclass of nn.LayerNorm with its own "
            f"forward, so where its features are is unknown; name its layout, e.g. "
            f"layouts={{{cls.__name__}: 'features_first'}} (or 'features_last'), or skip it with "
            f"exclude=")
    return None


def _width(name: str, module: nn.Module) -> int:
    shape = tuple(module.normalized_shape)
    if len(shape) != 1:
        raise ConversionError(
            f"pln.convert: '{name}' ({type(module).__name__}) normalises over the last {len(shape)} axes "
            f"{shape}; PLN groups features along one axis, so only a 1-D normalized_shape converts")
    return int(shape[0])


def _group(name: str, width: int, num_per_group: GroupSize) -> int:
    g = num_per_group(name, width) if callable(num_per_group) else num_per_group
    if not isinstance(g, numbers.Integral) or isinstance(g, bool):
        raise ConversionError(f"pln.convert: the group size for '{name}' must be an int, got {g!r}")
    g = int(g)
    if g <= 0 or width % g != 0:
        raise ConversionError(
            f"pln.convert: '{name}' has {width} features, which num_per_group={g} does not divide; "
            f"give a divisor of {width} (a function of (name, width) can pick one per module)")
    return g


def _eps(module: nn.Module) -> float:
    eps = getattr(module, "eps", None)
    if eps is None:  # nn.RMSNorm's default: the machine epsilon of the input's dtype
        weight = getattr(module, "weight", None)
        dtype = weight.dtype if weight is not None else torch.get_default_dtype()
        eps = torch.finfo(dtype).eps
    return float(eps)


def _build(module: nn.Module, kind: str, layout: str, g: int, width: int, p: float) -> _ParallelNorm:
    weight = getattr(module, "weight", None)
    bias = getattr(module, "bias", None)
    factory = {}
    if weight is not None:
        factory = {"device": weight.device, "dtype": weight.dtype}
    cls = PLS if kind == "rms" else ParallelLN
    new = cls(width, g, eps=_eps(module), p=p, layout=layout, elementwise_affine=weight is not None,
              bias=bias is not None, **factory)
    with torch.no_grad():
        if weight is not None:
            new.weight.copy_(weight.detach().reshape(-1))
        if bias is not None:
            new.bias.copy_(bias.detach().reshape(-1))
    new.train(module.training)
    return new


def _no_fused_path(module: nn.Module, args) -> None:
    """A forward pre-hook that does nothing: its presence stops
    nn.TransformerEncoderLayer's inference fast path, which would read
    norm.weight and norm.eps and run full-width LayerNorm in place of this module."""
    return None


def convert(model: nn.Module, num_per_group: GroupSize, *, p: float = 2.0,
            layer_norm: bool = True, rms_norm: bool = True,
            layouts: Optional[Dict[Type[nn.Module], str]] = None,
            exclude: Union[Callable[[str, nn.Module], bool], Set[str], Tuple[str, ...], None] = None
            ) -> List[Change]:
    """Replaces, in place, every LayerNorm of ``model`` by a :class:`pln.ParallelLN`
    and every RMSNorm by a :class:`pln.PLS` over the same features, weights copied.

    Args:
        model: any module; changed in place.
        num_per_group: features per group: an int for every module, or a
            function ``(qualified_name, width) -> int``. With the width itself,
            the converted model computes what the original did.
        p: exponent of the group statistic. Default: ``2`` (the paper's PLN).
        layer_norm: convert ``nn.LayerNorm`` (and the known LayerNorm-style
            modules: timm's ``LayerNorm2d`` of ConvNeXt, channels-first).
        rms_norm: convert ``nn.RMSNorm`` into :class:`pln.PLS`.
        layouts: layouts of other LayerNorm-style classes (subclasses of
            ``nn.LayerNorm`` with their own forward), e.g.
            ``{MyLayerNorm2d: "features_first"}``.
        exclude: qualified names to leave alone, or a function
            ``(name, module) -> bool``.

    Returns:
        One :class:`Change` (name, old module, new module) per replaced module,
        in the order of ``model.named_modules()``.

    Raises:
        ConversionError: a width its group size does not divide, a module kind
            PLN cannot stand for (``nn.GroupNorm`` pools over positions), a
            LayerNorm subclass whose layout is unknown, a multi-axis
            ``normalized_shape``. The model is then left exactly as it was: every
            replacement is planned and built before the first one is made.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"pln.convert: model must be an nn.Module, got {type(model).__name__}")
    layouts = dict(layouts or {})
    for cls, layout in layouts.items():
        if layout not in ("features_last", "features_first", "nc", "ntc", "nchw", "nhwc", "ncl"):
            raise ConversionError(f"pln.convert: unknown layout {layout!r} for {cls.__name__}")
    if exclude is None:
        excluded: Callable[[str, nn.Module], bool] = lambda name, module: False
    elif callable(exclude):
        excluded = exclude
    else:
        names = set(exclude)
        excluded = lambda name, module: name in names
    rms_cls = _rms_norm_class()

    plan: List[Tuple[str, nn.Module, str, str]] = []  # name, module, kind, layout
    for name, module in model.named_modules():
        if isinstance(module, _ParallelNorm) or excluded(name, module):
            continue
        kind = layout = None
        if layer_norm:
            layout = _layer_norm_layout(name, module, layouts)
            kind = "ln" if layout is not None else None
        if kind is None and rms_norm and rms_cls is not None and isinstance(module, rms_cls):
            kind, layout = "rms", "features_last"
        if kind is None:
            for refused, reason in _REFUSED.items():
                if isinstance(module, refused):
                    raise ConversionError(
                        f"pln.convert: '{name}' is {type(module).__name__}, which PLN does not replace: "
                        f"{reason}. Leave it with exclude={{'{name}'}}")
            continue
        plan.append((name, module, kind, layout))
    if plan and plan[0][0] == "":
        raise ConversionError("pln.convert: the model is itself a norm layer; build the PLN module "
                              "directly (pln.ParallelLN) or convert a model that contains it")

    built: List[Change] = []
    for name, module, kind, layout in plan:
        width = _width(name, module)
        g = _group(name, width, num_per_group)
        built.append(Change(name, module, _build(module, kind, layout, g, width, p)))

    # Every replacement is known to succeed: make them all.
    modules = dict(model.named_modules())
    for change in built:
        parent_name, _, attr = change.name.rpartition(".")
        parent = modules[parent_name]
        setattr(parent, attr, change.new)
        if isinstance(parent, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
            _disable_fused_layer(parent, change.new)
    _disable_nested_tensor_fast_path(model, built)
    return built


def _disable_fused_layer(layer: nn.Module, norm: nn.Module) -> None:
    """nn.TransformerEncoderLayer's inference fast path (eval, no grad) calls
    one fused kernel with norm1.weight, norm2.weight and the eps: it would
    run full-width LayerNorm and never call the converted modules. Each
    version of torch checks its own conditions; two of them are set here:
    ``activation_relu_or_gelu`` false (checked by the layer and by
    nn.TransformerEncoder since torch 1.12; the unfused path calls
    ``layer.activation`` and never reads it) and a forward pre-hook on the
    norm (checked by torch 2.1 and later)."""
    if hasattr(layer, "activation_relu_or_gelu"):
        layer.activation_relu_or_gelu = 0
    norm.register_forward_pre_hook(_no_fused_path)


def _disable_nested_tensor_fast_path(model: nn.Module, changes: List[Change]) -> None:
    """An nn.TransformerEncoder may turn its input into a nested tensor
    (``enable_nested_tensor``) for its layers' fused path; with a converted
    norm inside, its layers run the unfused path, which needs dense tensors."""
    if not changes:
        return
    converted = {id(c.new) for c in changes}
    for module in model.modules():
        if isinstance(module, nn.TransformerEncoder) and any(
                id(m) in converted for m in module.modules()):
            if hasattr(module, "use_nested_tensor"):
                module.use_nested_tensor = False
            if hasattr(module, "enable_nested_tensor"):
                module.enable_nested_tensor = False
