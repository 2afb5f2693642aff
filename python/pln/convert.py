"""pln.convert: put Parallel Layer Normalization into an existing model.

    result = pln.convert(model, num_per_group=8)

replaces, in place, every LayerNorm by a :class:`pln.ParallelLN` and every
RMSNorm by a :class:`pln.PLS` over the same features, with the weights
copied, and returns what it changed; ``result.skipped`` names every norm-like
module it left alone, with the reason. Whether a norm is centred is the
class's to say where the class is known; a module is replaced only once it is
shown to compute the norm it is taken for: at full width, with weights the
probe sets itself (and then restores), its replacement gives its output on a
probe input, and on one small enough for the epsilon to matter.
"""

import copy
import inspect
import math
import numbers
import re
import warnings
from typing import Callable, Dict, List, NamedTuple, Optional, Set, Tuple, Type, Union

import torch
import torch.nn as nn

from .modules import PLS, GatedNorm, ParallelLN, PerHeadNorm, _ParallelNorm

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
    ``model.named_modules()`` (a module registered under several names is
    listed under each, with one new module), with ``skipped``: every norm-like
    module (a class whose name holds "Norm") left alone, and why."""

    def __init__(self, changes: List[Change], skipped: List[Skipped]) -> None:
        super().__init__(changes)
        self.skipped = skipped


# Norm classes of other libraries whose layout and formula ("ln" centred, "rms"
# not) are known, by qualified class name; a subclass that keeps the forward
# computes the same. timm's LayerNorm2d (ConvNeXt) normalises channels-first
# [N, C, H, W] per pixel.
_KNOWN: Dict[str, Tuple[str, str]] = {
    "timm.layers.norm.LayerNorm": ("features_last", "ln"),
    "timm.layers.norm.LayerNorm2d": ("nchw", "ln"),
    "timm.layers.norm.LayerNormFp32": ("features_last", "ln"),
    "timm.layers.norm.LayerNorm2dFp32": ("nchw", "ln"),
    "timm.layers.norm.RmsNorm": ("features_last", "rms"),
    "timm.layers.norm.RmsNormFp32": ("features_last", "rms"),
    "timm.layers.norm.RmsNorm2d": ("nchw", "rms"),
    "timm.layers.norm.RmsNorm2dFp32": ("nchw", "rms"),
    "timm.models.layers.norm.LayerNorm": ("features_last", "ln"),
    "timm.models.layers.norm.LayerNorm2d": ("nchw", "ln"),
}

# Modules PLN cannot stand for, by base class: skipped (refused with strict=True).
_REFUSED = {
    nn.GroupNorm: "PLN does not replace it: it normalises each group of channels over all positions "
                  "(H, W, ...) together, while PLN normalises every position separately",
}

# Norm-like modules left alone without a word of warning: they normalise over
# the batch or over positions, which no PLN module does.
_OTHER_NORMS = (nn.modules.batchnorm._NormBase, nn.LocalResponseNorm, nn.CrossMapLRN2d)

_NORM_LIKE = re.compile(r"norm", re.IGNORECASE)
_GATED = re.compile(r"gated", re.IGNORECASE)
# Classes named as a per-position norm: their layout, when not given, is
# features last (Hugging Face's *RMSNorm, T5LayerNorm, ...), checked on a probe.
_PER_POSITION = re.compile(r"(layer_?norm|rms_?norm)", re.IGNORECASE)
# A class named as an RMS norm computes one: it becomes a PLS, never a centred
# ParallelLN, whatever a probe of its weights would allow.
_RMS_NAMED = re.compile(r"rms", re.IGNORECASE)

# Where a model's config keeps the epsilon of norms that do not hold their own.
_CONFIG_EPS = ("layer_norm_eps", "rms_norm_eps", "layer_norm_epsilon", "norm_eps", "norm_epsilon")

_LAYOUTS = ("features_last", "features_first", "nc", "ntc", "nchw", "nhwc", "ncl")


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _rms_norm_class() -> Optional[type]:
    return getattr(nn, "RMSNorm", None)  # torch 2.4 and later


def _known(cls: type) -> Optional[Tuple[str, str]]:
    """The layout and formula of a known class, or of a subclass that keeps its forward."""
    for base in cls.__mro__:
        known = _KNOWN.get(_qualname(base))
        if known is not None:
            return known if cls.forward is base.forward else None
    return None


def _norm_named(cls: type) -> bool:
    return any(_NORM_LIKE.search(base.__name__) for base in cls.__mro__ if base is not nn.Module)


def _holds_norms(module: nn.Module) -> bool:
    """Whether a module holds norms of its own (timm's NormMlpClassifierHead,
    GlobalResponseNormMlp): those are converted or reported under their own names."""
    return any(isinstance(m, _ParallelNorm) or _norm_named(type(m))
               for m in module.modules() if m is not module)


class _Candidate(NamedTuple):
    layout: str
    kinds: Tuple[str, ...]  # "ln", "rms", "gated": what the module may compute, tried in this order
    trusted: bool           # a torch class: replaced without a probe
    asked: bool             # named in layouts=: a mismatch is an error, not a skip


class _Refused(NamedTuple):
    """A module that cannot convert: skipped with the reason, or an error with strict=True."""
    reason: str


def _candidate(module: nn.Module, layouts: Dict[type, str], layer_norm: bool,
               rms_norm: bool) -> Union[_Candidate, _Refused, str, None]:
    """What a module may be replaced by; a string says why a norm-like module is left alone."""
    cls = type(module)
    rms_cls = _rms_norm_class()
    kinds = tuple(k for k, on in (("ln", layer_norm), ("rms", rms_norm)) if on)
    if _RMS_NAMED.search(cls.__name__):
        kinds = ("rms",) if rms_norm else ()
    for known_cls, layout in layouts.items():
        if isinstance(module, known_cls):
            return _Candidate(layout, kinds, False, True) if kinds else "layer_norm and rms_norm are off"
    if cls is nn.LayerNorm or (isinstance(module, nn.LayerNorm) and cls.forward is nn.LayerNorm.forward
                                and _known(cls) is None):
        return _Candidate("features_last", ("ln",), True, False) if layer_norm else "layer_norm=False"
    if rms_cls is not None and isinstance(module, rms_cls) and cls.forward is rms_cls.forward:
        return _Candidate("features_last", ("rms",), True, False) if rms_norm else "rms_norm=False"
    known = _known(cls)
    if known is not None:
        layout, kind = known
        if not (layer_norm if kind == "ln" else rms_norm):
            return "layer_norm=False" if kind == "ln" else "rms_norm=False"
        return _Candidate(layout, (kind,), False, False)
    for refused, reason in _REFUSED.items():
        if isinstance(module, refused):
            return _Refused(reason)
    if not _norm_named(cls):
        return None
    if isinstance(module, _OTHER_NORMS):
        return f"{cls.__name__} normalises over the batch or over positions, which no PLN module does"
    if _holds_norms(module):
        return None
    if any(_GATED.search(base.__name__) for base in cls.__mro__):
        if not rms_norm:
            return "rms_norm=False"
        return _Candidate("features_last", ("gated",), False, False)
    if isinstance(module, nn.LayerNorm):
        return _Refused(
            f"a subclass of nn.LayerNorm ({_qualname(cls)}) with its own forward, so where its features are "
            f"is unknown; name its layout, e.g. layouts={{{cls.__name__}: 'features_first'}} (or "
            f"'features_last')")
    if _PER_POSITION.search(cls.__name__) and not list(module.children()):
        return _Candidate("features_last", kinds, False, False) if kinds else "layer_norm and rms_norm are off"
    return (f"{cls.__name__} is not a LayerNorm or RMSNorm pln.convert knows; if it is one, name its "
            f"layout in layouts=")


def _features(module: nn.Module) -> Union[Tuple[int, ...], _Refused, None]:
    """The trailing axes a module normalises (one axis of C features, or
    ``(heads, head_dim)`` for a per-head norm whose weight is ``[heads, head_dim]``)."""
    shape = getattr(module, "normalized_shape", None)
    if shape is not None:
        shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
        if len(shape) == 1:
            return (int(shape[0]),)
        return _Refused(f"it normalises over the last {len(shape)} axes {shape}; PLN groups features "
                        f"along one axis, so only a 1-D normalized_shape converts")
    weight = getattr(module, "weight", None)
    if isinstance(weight, torch.Tensor) and weight.dim() in (1, 2):
        return tuple(int(n) for n in weight.shape)
    for attr in ("hidden_size", "num_features", "dim"):
        value = getattr(module, attr, None)
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return (int(value),)
    return None


def _own_group(module: nn.Module, features: Tuple[int, ...]) -> int:
    """The grouping a module computes with, as its attributes declare it (a
    gated norm's ``group_size``, or Falcon-H1's count ``n_groups``; a
    per-head norm's ``head_dim``), else its width; the probe checks it."""
    def positive(value) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0

    if len(features) == 2:
        return features[1]
    width = features[0]
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


def _real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _eps(module: nn.Module, given: Optional[float]) -> Optional[float]:
    """The module's epsilon; for a module that holds none (OLMo's LayerNorm), the
    one given to convert or found in the model's config (the probe checks it)."""
    for attr in ("eps", "variance_epsilon", "epsilon"):
        eps = getattr(module, attr, None)
        if _real(eps):
            return float(eps)
    rms_cls = _rms_norm_class()
    if rms_cls is not None and isinstance(module, rms_cls):  # eps=None: the input dtype's epsilon
        weight = getattr(module, "weight", None)
        return float(torch.finfo(weight.dtype if weight is not None else torch.get_default_dtype()).eps)
    return given


def _config_eps(model: nn.Module) -> Optional[float]:
    config = getattr(model, "config", None)
    for attr in _CONFIG_EPS:
        eps = getattr(config, attr, None)
        if _real(eps):
            return float(eps)
    return None


# A gated norm's variants: (centering, gate position, activation), tried in this order.
_GATED_VARIANTS = tuple((c, pos, act) for c in (False, True) for pos in ("before", "after")
                        for act in ("silu", "sigmoid"))


def _build(module: nn.Module, kind: Union[str, Tuple[bool, str, str]], layout: str, g: int,
           features: Tuple[int, ...], eps: float, p: float, weight_offset: float) -> _ParallelNorm:
    width = features[0] * features[-1] if len(features) == 2 else features[0]
    weight = getattr(module, "weight", None)
    bias = getattr(module, "bias", None)
    weight = weight if isinstance(weight, torch.Tensor) else None
    bias = bias if isinstance(bias, torch.Tensor) else None
    factory = {} if weight is None else {"device": weight.device, "dtype": weight.dtype}
    if isinstance(kind, tuple):
        centering, position, act = kind
        new = GatedNorm(width, g, eps, centering=centering, gate_position=position, activation=act,
                        elementwise_affine=weight is not None, bias=bias is not None, **factory)
    elif len(features) == 2:
        new = PerHeadNorm(features[0], features[1], g, eps, centering=kind == "ln", p=p,
                          elementwise_affine=weight is not None, bias=bias is not None, **factory)
    else:
        cls = PLS if kind == "rms" else ParallelLN
        new = cls(width, g, eps=eps, p=p, layout=layout, elementwise_affine=weight is not None,
                  bias=bias is not None, **factory)
    with torch.no_grad():
        if weight is not None:
            new.weight.copy_(weight.detach().reshape(new.weight.shape) + weight_offset)
        if bias is not None:
            new.bias.copy_(bias.detach().reshape(new.bias.shape))
    new.train(module.training)
    return new


def _probe(layout: str, features: Tuple[int, ...], dtype: torch.dtype, device: torch.device,
           scale: float = 1.0) -> torch.Tensor:
    """An input of the layout whose groups have a mean far from 0 (so that a
    centred norm and an RMS norm differ) and spread values, times ``scale``."""
    width = features[0]
    shape = {"features_last": (3, 2) + features, "nc": (5, width), "ntc": (2, 3, width),
             "nhwc": (2, 2, 3, width), "features_first": (2, width, 2, 3), "nchw": (2, width, 2, 3),
             "ncl": (2, width, 3)}[layout]
    gen = torch.Generator().manual_seed(20250519)
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) * 1.5 + 0.7) * scale
    return x.to(device=device, dtype=dtype)


class _ProbeWeights:
    """Sets a module's ``weight`` and ``bias`` to seeded values away from 0 for
    the probe (at a zero weight every norm outputs zeros, and a centred norm
    and an RMS norm look alike), then restores them exactly."""

    def __init__(self, module: nn.Module) -> None:
        self.params = [t for t in (getattr(module, n, None) for n in ("weight", "bias"))
                       if isinstance(t, torch.Tensor) and t.is_floating_point()]
        self.saved: List[torch.Tensor] = []

    def __enter__(self) -> "_ProbeWeights":
        gen = torch.Generator().manual_seed(7)
        with torch.no_grad():
            for t in self.params:
                self.saved.append(t.detach().clone())
                values = torch.rand(t.shape, generator=gen, dtype=torch.float64) + 0.5  # in [0.5, 1.5)
                t.copy_(values.to(t.dtype))
        return self

    def __exit__(self, *exc) -> None:
        with torch.no_grad():
            for t, saved in zip(self.params, self.saved):
                t.copy_(saved)


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


def _verified(module: nn.Module, candidate: _Candidate, features: Tuple[int, ...], eps: float,
              p: float, own: int) -> Union[Tuple[Union[str, Tuple[bool, str, str]], float], str]:
    """The kind and weight offset under which the module's full-width
    replacement gives its output on the probes; else why none does. The
    probes run with weights set by _ProbeWeights, restored after."""
    weight = getattr(module, "weight", None)
    param = weight if isinstance(weight, torch.Tensor) else next(module.parameters(), None)
    dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
    device = param.device if param is not None else torch.device("cpu")
    if device.type == "meta":
        return "its parameters are on the meta device, where what it computes cannot be checked"
    tolerance = 1e-4 if dtype in (torch.float32, torch.float64) else 2e-2
    layout = candidate.layout
    x = _probe(layout, features, dtype, device)
    # Values of the order of sqrt(eps), where the epsilon is a good part of the
    # group statistic: a wrong epsilon (one given to convert or read from a
    # config) shows there.
    small = _probe(layout, features, dtype, device, math.sqrt(eps)) if eps > 0 else None
    gate = _probe(layout, features, dtype, device).flip(-1) * 1.3 - 0.4 if candidate.kinds == ("gated",) else None

    def differences(replacement: nn.Module) -> Tuple[float, float]:
        return (_difference(module, replacement, x, gate),
                0.0 if small is None else _difference(module, replacement, small, gate))

    if candidate.kinds == ("gated",):
        tried = [(variant, 0.0, own, "gated norm (centering={}, gate {}, {})".format(*variant))
                 for variant in _GATED_VARIANTS]
    else:
        offsets = (0.0, 1.0) if isinstance(weight, torch.Tensor) else (0.0,)  # 1.0: Gemma's (1 + weight)
        full = own if len(features) == 2 else features[0]
        tried = [(kind, offset, full, ("LayerNorm" if kind == "ln" else "RMSNorm")
                  + (" with weight 1 + w" if offset else "")) for kind in candidate.kinds for offset in offsets]
    closest = (float("inf"), float("inf"), "")
    with _ProbeWeights(module):
        for kind, offset, g, label in tried:
            diff, diff_small = differences(_build(module, kind, layout, g, features, eps, p, offset).eval())
            if diff <= tolerance and diff_small <= tolerance:
                return kind, offset
            closest = min(closest, (diff, diff_small, label))
    diff, diff_small, label = closest
    if diff <= tolerance:
        return (f"it computes a {label} but not with eps={eps:g}: on an input whose variance is near eps, "
                f"the replacement is off by {diff_small:.3g} of the output's largest value; give its epsilon "
                f"(convert's eps=)")
    if candidate.kinds == ("gated",):
        return (f"no gated norm over groups of {own} (gate before or after, SiLU or sigmoid, centred or not) "
                f"gives its output on a probe (the closest, {label}, is off by {diff:.3g})")
    names = ["LayerNorm" if k == "ln" else "RMSNorm" for k in candidate.kinds]
    norms = "neither a LayerNorm nor an RMSNorm" if len(names) == 2 else f"no {names[0]}"
    return (f"at full width {norms} over its features in "
            f"layout '{layout}' gives its output (the closest, {label}, is off by {diff:.3g} of the output's "
            f"largest value): it computes something else (an activation, a gate, another axis)")


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


def convert(model: nn.Module, num_per_group: GroupSize, *, p: float = 2.0, eps: Optional[float] = None,
            layer_norm: bool = True, rms_norm: bool = True,
            layouts: Optional[Dict[Type[nn.Module], str]] = None,
            exclude: Union[Callable[[str, nn.Module], bool], Set[str], Tuple[str, ...], None] = None,
            strict: bool = False, warn: bool = True) -> Conversion:
    """Replaces, in place, every LayerNorm of ``model`` by a :class:`pln.ParallelLN`
    and every RMSNorm by a :class:`pln.PLS` over the same features, weights copied.

    Replaced: ``nn.LayerNorm``, ``nn.RMSNorm``, timm's LayerNorm and RmsNorm
    classes (``LayerNorm2d``, ``RmsNorm2d``: channels first), classes named
    like a per-position norm (Hugging Face's ``*RMSNorm``, ``T5LayerNorm``,
    Gemma's ``1 + weight`` form; a per-head norm with a ``[heads, head_dim]``
    weight, as Cohere's, becomes a :class:`pln.PerHeadNorm`), subclasses of
    these that keep their forward, the gated norms (``*RMSNormGated``:
    :class:`pln.GatedNorm`, gate before or after the norm, SiLU or sigmoid,
    whichever matches) and the classes of ``layouts``. A class known to be an
    RMS norm (torch's, timm's ``RmsNorm``, a class named ``*RMSNorm``) becomes
    a ``PLS``, whatever its weights. Each module that is not a torch class is
    replaced only if, at full width, its replacement gives its output on
    probe inputs, one of them small enough for the epsilon to matter (a
    LayerNorm, an RMSNorm, or an RMSNorm scaled by ``1 + weight``, whichever
    matches); the probe sets the module's weight and bias to values of its own
    and restores them after. Modules already converted (a ParallelLN, PLS,
    PQNorm, GatedNorm or PerHeadNorm) take the new group size. A module
    registered under several names is replaced under each by one new module.

    Args:
        model: any module; changed in place.
        num_per_group: features per group: an int for every module, a
            function ``(qualified_name, width) -> int``, or ``"same"``: each
            module's own grouping (its width; a gated norm's ``group_size`` or
            ``n_groups``; a per-head norm's ``head_dim``; a converted module's
            group size), with which the converted model computes what the
            original did.
        p: exponent of the group statistic. Default: ``2`` (the paper's PLN).
        eps: the epsilon of norms that hold none (OLMo's LayerNorm, which has
            no parameters); without it, the model's ``config.layer_norm_eps``
            (or ``rms_norm_eps``, ...) where there is one. The probe checks it.
        layer_norm: convert LayerNorms into :class:`pln.ParallelLN`.
        rms_norm: convert RMSNorms into :class:`pln.PLS`.
        layouts: the layouts of other norm classes (or of subclasses with
            their own forward), e.g. ``{MyLayerNorm2d: "features_first"}``;
            whether each is a LayerNorm or an RMSNorm is checked on a probe.
        exclude: qualified names to leave alone, or a function
            ``(name, module) -> bool``.
        strict: raise :class:`ConversionError` naming every LayerNorm- or
            RMSNorm-like module that would be left alone (for any reason but
            ``exclude``, ``layer_norm=False`` or ``rms_norm=False``) instead of
            skipping it with a warning. Default: ``False``.
        warn: warn (``UserWarning``) when a LayerNorm- or RMSNorm-like module
            is left alone for any reason but ``exclude``. Default: ``True``.

    Returns:
        A :class:`Conversion`: the list of :class:`Change` (name, old module,
        new module) per replaced module, in the order of
        ``model.named_modules()``, and ``skipped``, a :class:`Skipped` (name,
        module, reason) per norm-like module left alone, containers of norms
        apart (their norms are listed under their own names).

    Raises:
        ConversionError: a width its group size does not divide, a class of
            ``layouts`` that computes neither norm, a Mamba-2 gated norm given
            another grouping than its mixer's, and with ``strict=True`` any
            module that cannot convert (``nn.GroupNorm``, which pools over
            positions, a LayerNorm subclass whose layout is unknown, a
            multi-axis ``normalized_shape``, an unknown epsilon, ...). The
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
        excluded_names = set(exclude)
        excluded = lambda name, module: name in excluded_names
    given_eps = eps if eps is not None else _config_eps(model)

    # Every name of every module: a module registered twice (self.b = self.a) is
    # planned once and replaced under each of its names.
    named = list(model.named_modules(remove_duplicate=False))
    names_of: Dict[int, List[str]] = {}
    modules: List[nn.Module] = []
    for name, module in named:
        if id(module) not in names_of:
            names_of[id(module)] = []
            modules.append(module)
        names_of[id(module)].append(name)

    skipped: List[Skipped] = []
    warned: List[Skipped] = []

    def skip(module: nn.Module, reason: str, quiet: bool = False) -> None:
        for name in names_of[id(module)]:
            skipped.append(Skipped(name, module, reason))
            if not quiet and not isinstance(module, _OTHER_NORMS):
                warned.append(skipped[-1])

    plan: List[Tuple[nn.Module, Union[_Candidate, _ParallelNorm]]] = []
    for module in modules:
        names = names_of[id(module)]
        if any(excluded(name, module) for name in names):
            if _NORM_LIKE.search(type(module).__name__):
                skip(module, "excluded", quiet=True)
            continue
        if isinstance(module, _ParallelNorm):
            plan.append((module, module))  # converted before: takes the new group size
            continue
        found = _candidate(module, layouts, layer_norm, rms_norm)
        if found is None:
            continue
        if isinstance(found, _Refused):
            skip(module, found.reason)
        elif isinstance(found, str):
            skip(module, found, quiet=found in ("layer_norm=False", "rms_norm=False"))
        else:
            plan.append((module, found))
    if any("" in names_of[id(module)] for module, _ in plan):
        raise ConversionError("pln.convert: the model is itself a norm layer; build the PLN module "
                              "directly (pln.ParallelLN) or convert a model that contains it")

    built: List[Tuple[nn.Module, nn.Module]] = []
    for module, candidate in plan:
        name = names_of[id(module)][0]
        if isinstance(candidate, _ParallelNorm):
            regrouped = _regrouped(model, names_of[id(module)], module, num_per_group)
            if regrouped is not None:
                built.append((module, regrouped))
            continue
        cls_name = type(module).__name__
        features = _features(module)
        if isinstance(features, _Refused):
            skip(module, features.reason)
            continue
        module_eps = _eps(module, given_eps)
        problem = None
        if features is None:
            problem = "its number of features is unknown (no normalized_shape, 1-D weight or hidden_size)"
        elif len(features) == 2 and (candidate.layout != "features_last" or candidate.kinds == ("gated",)):
            problem = (f"its weight has shape {features}, which pln.convert takes for [heads, head_dim] only "
                       f"in a LayerNorm or RMSNorm over the last axis")
        elif module_eps is None:
            problem = ("its epsilon is unknown (no eps or variance_epsilon attribute, and no layer_norm_eps or "
                       "rms_norm_eps in the model's config): give it, e.g. pln.convert(model, ..., eps=1e-5)")
        kind, offset = candidate.kinds[0], 0.0
        own = _own_group(module, features) if problem is None else 0
        if problem is None and not candidate.trusted:
            verdict = _verified(module, candidate, features, module_eps, p, own)
            if isinstance(verdict, str):
                problem = verdict
            else:
                kind, offset = verdict
        if problem is not None:
            if candidate.asked:
                raise ConversionError(f"pln.convert: '{name}' ({cls_name}, given in layouts=) is not replaced: "
                                      f"{problem}. Leave it with exclude={{'{name}'}}")
            skip(module, problem)
            continue
        width = features[0] * features[1] if len(features) == 2 else features[0]
        g = _group(name, width, num_per_group, own)
        if kind not in ("ln", "rms"):
            _check_mixer_grouping(model, names_of[id(module)], cls_name, own, g)
        built.append((module, _build(module, kind, candidate.layout, g, features, module_eps, p, offset)))

    if strict and warned:
        listed = "; ".join(f"'{s.name}' ({type(s.module).__name__}): {s.reason}" for s in warned)
        names = ", ".join(repr(s.name) for s in warned)
        raise ConversionError(
            f"pln.convert (strict=True): {len(warned)} norm-like module(s) cannot be converted: {listed}. "
            f"Leave them with exclude={{{names}}}, or convert with strict=False to replace the others and "
            f"skip these with a warning")

    # Every replacement is known to succeed: make them all, under every name.
    by_name = dict(named)
    order = {name: i for i, (name, _) in enumerate(named)}
    changes: List[Change] = []
    for old, new in built:
        for name in names_of[id(old)]:
            parent_name, _, attr = name.rpartition(".")
            parent = by_name[parent_name]
            setattr(parent, attr, new)
            if isinstance(parent, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
                _disable_fused_layer(parent, new)
            changes.append(Change(name, old, new))
    changes.sort(key=lambda c: order[c.name])
    _disable_nested_tensor_fast_path(model, changes)
    skipped.sort(key=lambda s: order.get(s.name, 0))
    if warn and warned:
        listed = "; ".join(f"'{s.name}' ({type(s.module).__name__}): {s.reason}" for s in warned)
        warnings.warn(f"pln.convert left {len(warned)} norm-like module(s) as they were: {listed}. "
                      f"strict=True makes this an error; exclude= or warn=False leaves them quietly",
                      stacklevel=2)
    return Conversion(changes, skipped)


def _regrouped(model: nn.Module, names: List[str], module: _ParallelNorm,
               num_per_group: GroupSize) -> Optional[_ParallelNorm]:
    """A module converted before, with the group size asked for now (its kind,
    eps, p, layout and weights kept); None if it has that size already."""
    own = module.num_per_group
    g = _group(names[0], module.num_features, num_per_group, own)
    if g == own:
        return None
    if isinstance(module, GatedNorm):
        _check_mixer_grouping(model, names, type(module).__name__, own, g)
    new = copy.deepcopy(module)
    new.num_per_group = g
    return new


def _check_mixer_grouping(model: nn.Module, names: List[str], cls_name: str, own: int, g: int) -> None:
    if g == own:
        return
    for name in names:
        if _parent_reads_norm(model, name):
            raise ConversionError(
                f"pln.convert: '{name}' ({cls_name}) is read by the module holding it, which in some paths "
                f"(transformers' Mamba-2 mixers, training without a cache) normalises with the norm's weight and "
                f"eps itself, over groups of {own}: converted to groups of {g} the model would compute two "
                f"things. Keep its grouping (num_per_group='same', or {own} for it) or exclude it")


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
