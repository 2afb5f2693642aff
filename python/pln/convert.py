"""pln.convert: put Parallel Layer Normalization into an existing model.

    result = pln.convert(model, num_per_group=8)

replaces, in place, every LayerNorm by a :class:`pln.ParallelLN` and every
RMSNorm by a :class:`pln.PLS` over the same features, with the weights
copied, and returns what it changed; ``result.skipped`` names every norm-like
module it left alone, with the reason. A module is replaced only once it is
shown to compute the norm it is taken for: at full width, its replacement
gives its output on a probe input.
"""

import inspect
import numbers
import re
import warnings
from typing import Callable, Dict, List, NamedTuple, Optional, Set, Tuple, Type, Union

import torch
import torch.nn as nn

from .modules import PLS, GatedNorm, ParallelLN, _ParallelNorm

__all__ = ["convert", "Change", "Skipped", "Conversion", "ConversionError"]

GroupSize = Union[int, str, Callable[[str, int], int]]


class ConversionError(ValueError):
    """A model pln.convert refuses; nothing in it was changed."""


class Change(NamedTuple):
    """One replaced module: its qualified name, the module it was and the one it is now."""
    name: str
    old: nn.Module
    new: nn.Module


class Skipped(NamedTuple):
    """A norm-like module left as it was: its qualified name, the module and why."""
    name: str
    module: nn.Module
    reason: str


class Conversion(List[Change]):
    """The :class:`Change` list of a conversion, in the order of
    ``model.named_modules()``, with ``skipped``: every norm-like module (a
    class whose name holds "Norm") left alone, and why."""

    def __init__(self, changes: List[Change], skipped: List[Skipped]) -> None:
        super().__init__(changes)
        self.skipped = skipped


# Norm classes of other libraries whose layout is known, by qualified class
# name; a subclass that keeps the forward has the same layout. timm's
# LayerNorm2d (ConvNeXt) normalises channels-first [N, C, H, W] per pixel.
_KNOWN: Dict[str, str] = {
    "timm.layers.norm.LayerNorm": "features_last",
    "timm.layers.norm.LayerNorm2d": "nchw",
    "timm.layers.norm.LayerNormFp32": "features_last",
    "timm.layers.norm.LayerNorm2dFp32": "nchw",
    "timm.layers.norm.RmsNorm": "features_last",
    "timm.layers.norm.RmsNormFp32": "features_last",
    "timm.layers.norm.RmsNorm2d": "nchw",
    "timm.layers.norm.RmsNorm2dFp32": "nchw",
    "timm.models.layers.norm.LayerNorm": "features_last",
    "timm.models.layers.norm.LayerNorm2d": "nchw",
}

# Modules PLN cannot stand for, by base class: a conversion that meets one stops.
_REFUSED = {
    nn.GroupNorm: "it normalises each group of channels over all positions (H, W, ...) together, "
                  "while PLN normalises every position separately: no PLN module computes it",
}

# Norm-like modules left alone without a word of warning: they normalise over
# the batch or over positions, which no PLN module does.
_OTHER_NORMS = (nn.modules.batchnorm._NormBase, nn.LocalResponseNorm, nn.CrossMapLRN2d)

_NORM_LIKE = re.compile(r"norm", re.IGNORECASE)
_GATED = re.compile(r"gated", re.IGNORECASE)
# Classes named as a per-position norm: their layout, when not given, is
# features last (Hugging Face's *RMSNorm, T5LayerNorm, ...), checked on a probe.
_PER_POSITION = re.compile(r"(layer_?norm|rms_?norm)", re.IGNORECASE)

_LAYOUTS = ("features_last", "features_first", "nc", "ntc", "nchw", "nhwc", "ncl")


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _rms_norm_class() -> Optional[type]:
    return getattr(nn, "RMSNorm", None)  # torch 2.4 and later


def _known_layout(cls: type) -> Optional[str]:
    """The layout of a known class, or of a subclass that keeps its forward."""
    for base in cls.__mro__:
        layout = _KNOWN.get(_qualname(base))
        if layout is not None:
            return layout if cls.forward is base.forward else None
    return None


class _Candidate(NamedTuple):
    layout: str
    kinds: Tuple[str, ...]  # "ln", "rms", "gated": what the module may compute, tried in this order
    trusted: bool           # a torch class: replaced without a probe
    asked: bool             # named in layouts=: a mismatch is an error, not a skip


def _candidate(name: str, module: nn.Module, layouts: Dict[type, str], layer_norm: bool,
               rms_norm: bool) -> Union[_Candidate, str, None]:
    """What a module may be replaced by; a string says why a norm-like module is left alone."""
    cls = type(module)
    rms_cls = _rms_norm_class()
    kinds = tuple(k for k, on in (("ln", layer_norm), ("rms", rms_norm)) if on)
    for known_cls, layout in layouts.items():
        if isinstance(module, known_cls):
            return _Candidate(layout, kinds, False, True) if kinds else "layer_norm and rms_norm are off"
    if cls is nn.LayerNorm or (isinstance(module, nn.LayerNorm) and cls.forward is nn.LayerNorm.forward
                                and _known_layout(cls) is None):
        return _Candidate("features_last", ("ln",), True, False) if layer_norm else "layer_norm=False"
    if rms_cls is not None and isinstance(module, rms_cls) and cls.forward is rms_cls.forward:
        return _Candidate("features_last", ("rms",), True, False) if rms_norm else "rms_norm=False"
    known = _known_layout(cls)
    if known is not None:
        return _Candidate(known, kinds, False, False) if kinds else "layer_norm and rms_norm are off"
    for refused, reason in _REFUSED.items():
        if isinstance(module, refused):
            raise ConversionError(
                f"pln.convert: '{name}' is {cls.__name__}, which PLN does not replace: {reason}. "
                f"Leave it with exclude={{'{name}'}}")
    if not any(_NORM_LIKE.search(base.__name__) for base in cls.__mro__ if base is not nn.Module):
        return None
    if isinstance(module, _OTHER_NORMS):
        return f"{cls.__name__} normalises over the batch or over positions, which no PLN module does"
    if any(_GATED.search(base.__name__) for base in cls.__mro__):
        if not rms_norm:
            return "rms_norm=False"
        return _Candidate("features_last", ("gated",), False, False)
    if isinstance(module, nn.LayerNorm):
        raise ConversionError(
            f"pln.convert: '{name}' is {_qualname(cls)}, a subclass of nn.LayerNorm with its own "
            f"forward, so where its features are is unknown; name its layout, e.g. "
            f"layouts={{{cls.__name__}: 'features_first'}} (or 'features_last'), or skip it with "
            f"exclude=")
    if _PER_POSITION.search(cls.__name__) and not list(module.children()):
        return _Candidate("features_last", kinds, False, False) if kinds else "layer_norm and rms_norm are off"
    return (f"{cls.__name__} is not a LayerNorm or RMSNorm pln.convert knows; if it is one, name its "
            f"layout in layouts=")


def _width(module: nn.Module) -> Optional[int]:
    shape = getattr(module, "normalized_shape", None)
    if shape is not None:
        shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
        return int(shape[0]) if len(shape) == 1 else -len(shape)
    weight = getattr(module, "weight", None)
    if isinstance(weight, torch.Tensor) and weight.dim() == 1:
        return int(weight.numel())
    for attr in ("hidden_size", "num_features", "dim"):
        value = getattr(module, attr, None)
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
    return None


def _own_group(module: nn.Module, width: int) -> int:
    """The grouping a module computes with, as its attributes declare it (a
    gated norm's ``group_size``, or Falcon-H1's count ``n_groups``), else its
    width; the probe checks it."""
    def positive(value) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0

    g = getattr(module, "group_size", None)
    if positive(g):
        return int(g)
    count = getattr(module, "n_groups", None)
    if positive(count) and width % count == 0:
        return width // int(count)
    return width


def _group(name: str, width: int, num_per_group: GroupSize, own: int) -> int:
    if isinstance(num_per_group, str):
        if num_per_group != "same":
            raise ConversionError(f"pln.convert: num_per_group must be an int, a function or 'same', got "
                                  f"{num_per_group!r}")
        return own
    g = num_per_group(name, width) if callable(num_per_group) else num_per_group
    if not isinstance(g, numbers.Integral) or isinstance(g, bool):
        raise ConversionError(f"pln.convert: the group size for '{name}' must be an int, got {g!r}")
    g = int(g)
    if g <= 0 or width % g != 0:
        raise ConversionError(
            f"pln.convert: '{name}' has {width} features, which num_per_group={g} does not divide; "
            f"give a divisor of {width} (a function of (name, width) can pick one per module)")
    return g


def _eps(module: nn.Module) -> Optional[float]:
    for attr in ("eps", "variance_epsilon", "epsilon"):
        eps = getattr(module, attr, None)
        if isinstance(eps, numbers.Real) and not isinstance(eps, bool):
            return float(eps)
    rms_cls = _rms_norm_class()
    if rms_cls is not None and isinstance(module, rms_cls):  # eps=None: the input dtype's epsilon
        weight = getattr(module, "weight", None)
        return float(torch.finfo(weight.dtype if weight is not None else torch.get_default_dtype()).eps)
    return None


# A gated norm's variants: (centering, gate position, activation), tried in this order.
_GATED_VARIANTS = tuple((c, pos, act) for c in (False, True) for pos in ("before", "after")
                        for act in ("silu", "sigmoid"))


def _build(module: nn.Module, kind: Union[str, Tuple[bool, str, str]], layout: str, g: int, width: int, eps: float,
           p: float, weight_offset: float) -> _ParallelNorm:
    weight = getattr(module, "weight", None)
    bias = getattr(module, "bias", None)
    weight = weight if isinstance(weight, torch.Tensor) else None
    bias = bias if isinstance(bias, torch.Tensor) else None
    factory = {} if weight is None else {"device": weight.device, "dtype": weight.dtype}
    if isinstance(kind, tuple):
        centering, position, act = kind
        new = GatedNorm(width, g, eps, centering=centering, gate_position=position, activation=act,
                        elementwise_affine=weight is not None, bias=bias is not None, **factory)
    else:
        cls = PLS if kind == "rms" else ParallelLN
        new = cls(width, g, eps=eps, p=p, layout=layout, elementwise_affine=weight is not None,
                  bias=bias is not None, **factory)
    with torch.no_grad():
        if weight is not None:
            new.weight.copy_(weight.detach().reshape(-1) + weight_offset)
        if bias is not None:
            new.bias.copy_(bias.detach().reshape(-1))
    new.train(module.training)
    return new


def _probe(layout: str, width: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """An input of the layout whose groups have a mean far from 0 (so that a
    centred norm and an RMS norm differ) and spread values."""
    shape = {"features_last": (3, 2, width), "nc": (5, width), "ntc": (2, 3, width), "nhwc": (2, 2, 3, width),
             "features_first": (2, width, 2, 3), "nchw": (2, width, 2, 3), "ncl": (2, width, 3)}[layout]
    gen = torch.Generator().manual_seed(20250519)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * 1.5 + 0.7
    return x.to(device=device, dtype=dtype)


def _difference(module: nn.Module, replacement: nn.Module, x: torch.Tensor,
                gate: Optional[torch.Tensor] = None) -> float:
    """The largest difference of the two outputs on x, relative to the largest output."""
    args = (x,) if gate is None else (x, gate)
    with torch.no_grad():
        try:
            want = module(*args)
        except Exception:  # noqa: BLE001 - a module that cannot take the probe computes no norm we know
            return float("inf")
        got = replacement(*args)
    if not isinstance(want, torch.Tensor) or want.shape != got.shape:
        return float("inf")
    want, got = want.double(), got.double()
    return float((want - got).abs().max() / want.abs().max().clamp_min(1e-30))


def _verified(name: str, module: nn.Module, candidate: _Candidate, width: int, eps: float,
              p: float, own: int) -> Union[Tuple[Union[str, Tuple[bool, str, str]], float], str]:
    """The kind and weight offset under which the module's full-width
    replacement gives its output on a probe; else why none does."""
    weight = getattr(module, "weight", None)
    param = weight if isinstance(weight, torch.Tensor) else next(module.parameters(), None)
    dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
    device = param.device if param is not None else torch.device("cpu")
    if device.type == "meta":
        return "its parameters are on the meta device, where what it computes cannot be checked"
    tolerance = 1e-4 if dtype in (torch.float32, torch.float64) else 2e-2
    x = _probe(candidate.layout, width, dtype, device)
    offsets = (0.0, 1.0) if isinstance(weight, torch.Tensor) else (0.0,)  # 1.0: Gemma's (1 + weight)
    closest = (float("inf"), "")
    if candidate.kinds == ("gated",):
        gate = _probe(candidate.layout, width, dtype, device).flip(-1) * 1.3 - 0.4
        for variant in _GATED_VARIANTS:
            full = _build(module, variant, candidate.layout, own, width, eps, p, 0.0).eval()
            diff = _difference(module, full, x, gate)
            if diff <= tolerance:
                return variant, 0.0
            closest = min(closest, (diff, "gated norm (centering={}, gate {}, {})".format(*variant)))
        return (f"no gated norm over groups of {own} (gate before or after, SiLU or sigmoid, centred or not) "
                f"gives its output on a probe (the closest, {closest[1]}, is off by {closest[0]:.3g})")
    for kind in candidate.kinds:
        for offset in offsets:
            full = _build(module, kind, candidate.layout, width, width, eps, p, offset).eval()
            diff = _difference(module, full, x)
            if diff <= tolerance:
                return kind, offset
            label = ("LayerNorm" if kind == "ln" else "RMSNorm") + (" with weight 1 + w" if offset else "")
            closest = min(closest, (diff, label))
    return (f"at full width neither a LayerNorm nor an RMSNorm over its features in layout "
            f"'{candidate.layout}' gives its output (the closest, {closest[1]}, is off by "
            f"{closest[0]:.3g} of the output's largest value): it computes something else (an "
            f"activation, a gate, another axis)")


def _parent_reads_norm(model: nn.Module, name: str) -> bool:
    """Whether the module holding `name` reads its norm's weight and eps itself, as
    transformers' Mamba-2 mixers do for their combined scan kernel (in training
    without a cache), which then normalises in place of the norm module."""
    parent_name, _, _ = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    try:
        source = inspect.getsource(type(parent))
    except (OSError, TypeError):
        return False
    return "norm.variance_epsilon" in source


def _no_fused_path(module: nn.Module, args) -> None:
    """A forward pre-hook that does nothing: its presence stops
    nn.TransformerEncoderLayer's inference fast path, which would read
    norm.weight and norm.eps and run full-width LayerNorm in place of this module."""
    return None


def convert(model: nn.Module, num_per_group: GroupSize, *, p: float = 2.0,
            layer_norm: bool = True, rms_norm: bool = True,
            layouts: Optional[Dict[Type[nn.Module], str]] = None,
            exclude: Union[Callable[[str, nn.Module], bool], Set[str], Tuple[str, ...], None] = None,
            warn: bool = True) -> Conversion:
    """Replaces, in place, every LayerNorm of ``model`` by a :class:`pln.ParallelLN`
    and every RMSNorm by a :class:`pln.PLS` over the same features, weights copied.

    Replaced: ``nn.LayerNorm``, ``nn.RMSNorm``, timm's LayerNorm and RmsNorm
    classes (``LayerNorm2d``, ``RmsNorm2d``: channels first), classes named
    like a per-position norm (Hugging Face's ``*RMSNorm``, ``T5LayerNorm``,
    Gemma's ``1 + weight`` form), subclasses of these that keep their forward,
    the gated norms (``*RMSNormGated``: :class:`pln.GatedNorm`, gate before
    or after the norm, SiLU or sigmoid, whichever matches) and the classes of
    ``layouts``. Each one that is not a torch class is
    replaced only if, at full width, its replacement gives its output on a
    probe input (a LayerNorm, an RMSNorm, or an RMSNorm scaled by
    ``1 + weight``, whichever matches).

    Args:
        model: any module; changed in place.
        num_per_group: features per group: an int for every module, a
            function ``(qualified_name, width) -> int``, or ``"same"``: each
            module's own grouping (its width; a gated norm's ``group_size`` or ``n_groups``),
            with which the converted model computes what the original did.
        p: exponent of the group statistic. Default: ``2`` (the paper's PLN).
        layer_norm: convert LayerNorms into :class:`pln.ParallelLN`.
        rms_norm: convert RMSNorms into :class:`pln.PLS`.
        layouts: the layouts of other norm classes (or of subclasses with
            their own forward), e.g. ``{MyLayerNorm2d: "features_first"}``;
            whether each is a LayerNorm or an RMSNorm is checked on a probe.
        exclude: qualified names to leave alone, or a function
            ``(name, module) -> bool``.
        warn: warn (``UserWarning``) when a LayerNorm- or RMSNorm-like module
            is left alone for any reason but ``exclude``. Default: ``True``.

    Returns:
        A :class:`Conversion`: the list of :class:`Change` (name, old module,
        new module) per replaced module, in the order of
        ``model.named_modules()``, and ``skipped``, a :class:`Skipped` (name,
        module, reason) per norm-like module left alone.

    Raises:
        ConversionError: a width its group size does not divide, a module kind
            PLN cannot stand for (``nn.GroupNorm`` pools over positions), a
            LayerNorm subclass whose layout is unknown, a class of ``layouts``
            that computes neither norm, a multi-axis ``normalized_shape``. The
            model is then left exactly as it was: every replacement is planned
            and built before the first one is made.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"pln.convert: model must be an nn.Module, got {type(model).__name__}")
    layouts = dict(layouts or {})
    for cls, layout in layouts.items():
        if layout not in _LAYOUTS:
            raise ConversionError(f"pln.convert: unknown layout {layout!r} for {cls.__name__}")
    if exclude is None:
        excluded: Callable[[str, nn.Module], bool] = lambda name, module: False
    elif callable(exclude):
        excluded = exclude
    else:
        names = set(exclude)
        excluded = lambda name, module: name in names

    plan: List[Tuple[str, nn.Module, _Candidate]] = []
    skipped: List[Skipped] = []
    warned: List[Skipped] = []

    def skip(name: str, module: nn.Module, reason: str, quiet: bool = False) -> None:
        skipped.append(Skipped(name, module, reason))
        if not quiet and not isinstance(module, _OTHER_NORMS):
            warned.append(skipped[-1])

    for name, module in model.named_modules():
        if isinstance(module, _ParallelNorm):
            continue
        if excluded(name, module):
            if _NORM_LIKE.search(type(module).__name__):
                skip(name, module, "excluded", quiet=True)
            continue
        found = _candidate(name, module, layouts, layer_norm, rms_norm)
        if found is None:
            continue
        if isinstance(found, str):
            skip(name, module, found, quiet=found in ("layer_norm=False", "rms_norm=False"))
            continue
        plan.append((name, module, found))
    if plan and plan[0][0] == "":
        raise ConversionError("pln.convert: the model is itself a norm layer; build the PLN module "
                              "directly (pln.ParallelLN) or convert a model that contains it")

    built: List[Change] = []
    for name, module, candidate in plan:
        cls_name = type(module).__name__
        width = _width(module)
        if width is not None and width < 0:
            raise ConversionError(
                f"pln.convert: '{name}' ({cls_name}) normalises over the last {-width} axes "
                f"{tuple(module.normalized_shape)}; PLN groups features along one axis, so only a 1-D "
                f"normalized_shape converts")
        eps = _eps(module)
        problem = None
        if width is None:
            problem = "its number of features is unknown (no normalized_shape, 1-D weight or hidden_size)"
        elif eps is None:
            problem = "its epsilon is unknown (no eps or variance_epsilon attribute)"
        kind, offset = candidate.kinds[0], 0.0
        own = _own_group(module, width) if width is not None else 0
        if problem is None and not candidate.trusted:
            verdict = _verified(name, module, candidate, width, eps, p, own)
            if isinstance(verdict, str):
                problem = verdict
            else:
                kind, offset = verdict
        if problem is not None:
            if candidate.asked:
                raise ConversionError(f"pln.convert: '{name}' ({cls_name}, given in layouts=) is not replaced: "
                                      f"{problem}. Leave it with exclude={{'{name}'}}")
            skip(name, module, problem)
            continue
        g = _group(name, width, num_per_group, own)
        if kind not in ("ln", "rms") and g != own and _parent_reads_norm(model, name):
            raise ConversionError(
                f"pln.convert: '{name}' ({cls_name}) is read by the module holding it, which in some paths "
                f"(transformers' Mamba-2 mixers, training without a cache) normalises with the norm's weight and "
                f"eps itself, over groups of {own}: converted to groups of {g} the model would compute two "
                f"things. Keep its grouping (num_per_group='same', or {own} for it) or exclude it")
        built.append(Change(name, module, _build(module, kind, candidate.layout, g, width, eps, p, offset)))

    # Every replacement is known to succeed: make them all.
    modules = dict(model.named_modules())
    for change in built:
        parent_name, _, attr = change.name.rpartition(".")
        parent = modules[parent_name]
        setattr(parent, attr, change.new)
        if isinstance(parent, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
            _disable_fused_layer(parent, change.new)
    _disable_nested_tensor_fast_path(model, built)
    order = {name: i for i, name in enumerate(modules)}
    skipped.sort(key=lambda s: order.get(s.name, 0))
    if warn and warned:
        listed = "; ".join(f"'{s.name}' ({type(s.module).__name__}): {s.reason}" for s in warned)
        warnings.warn(f"pln.convert left {len(warned)} norm-like module(s) as they were: {listed}",
                      stacklevel=2)
    return Conversion(built, skipped)


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
