"""Functional Parallel Layer Normalization, shaped like ``torch.nn.functional``.

    import pln.functional as PF
    y = PF.parallel_ln(x, 8)                                  # [..., C], groups of 8
    y = PF.parallel_ln(x, 8, w, b, layout="features_first")   # [N, C, ...]
    y = PF.pls(x, 8)                                          # no centering (RMSNorm per group)
    y = PF.pq_norm(x, 8, p=3.0, q=1.5)

Each function infers the feature count from the input and calls the fused
operators ``torch.ops.pln.parallel_ln`` and ``torch.ops.pln.pq_norm`` (CPU,
CUDA, Meta, autograd, torch.compile, torch.export). Under ``torch.func``
transforms and forward-mode AD, which the fused operators' C++ autograd does
not cover, and in ONNX export, they call the operators' composite
formulation instead (``torch.ops.pln.parallel_ln_composite``), which those
tracers see as ATen operations.
"""

from typing import Optional, Tuple

import torch
from torch import Tensor

__all__ = ["parallel_ln", "pls", "pq_norm", "gated_norm", "LAYOUTS", "LOCAL_WIDTH"]

#: Layouts the functions accept. "features_last" (the default, as for
#: ``layer_norm``): features on the last axis, any leading rank.
#: "features_first": features on axis 1 of a tensor of rank >= 2, as for
#: ``group_norm`` ([N, C], [N, C, L], [N, C, H, W], [N, C, D, H, W], ...).
#: The operators' fixed-rank layouts are accepted too.
LAYOUTS = ("features_last", "features_first", "nc", "ntc", "nchw", "nhwc", "ncl")

#: The operators' fixed-rank layouts: (rank, feature axis) of each (pln.onnx
#: and pln.distributed read it too).
FIXED_LAYOUTS = {"nc": (2, 1), "ntc": (3, 2), "nchw": (4, 1), "nhwc": (4, 3), "ncl": (3, 1)}


def _feature_axis(input: Tensor, layout: str) -> int:
    if layout == "features_last":
        if input.dim() < 1:
            raise ValueError("pln: a features_last input needs at least 1 dimension, got a 0-D tensor")
        return input.dim() - 1
    if layout == "features_first":
        if input.dim() < 2:
            raise ValueError(f"pln: a features_first input needs at least 2 dimensions [N, C, ...], "
                             f"got a {input.dim()}-D tensor of shape {tuple(input.shape)}")
        return 1
    if layout in FIXED_LAYOUTS:
        return FIXED_LAYOUTS[layout][1]
    raise ValueError(f"pln: unknown layout '{layout}'; expected one of {', '.join(LAYOUTS)}")


def _as_op_layout(input: Tensor, layout: str) -> Tuple[Tensor, str]:
    """The input viewed in one of the operators' fixed-rank layouts (a view
    when the input is contiguous), and that layout."""
    if layout in FIXED_LAYOUTS:
        return input, layout
    rank = input.dim()
    if layout == "features_last":
        if rank == 2:
            return input, "nc"
        if rank == 3:
            return input, "ntc"
        return input.reshape(-1, input.shape[-1]), "nc"
    # features_first
    if rank == 2:
        return input, "nc"
    if rank == 3:
        return input, "ncl"
    if rank == 4:
        return input, "nchw"
    # flatten, not reshape(N, C, -1), which is ambiguous for an empty batch.
    return input.flatten(2), "ncl"


#: ``num_features`` for the operators meaning "the input's width" (any value
#: <= 0): they then normalise whatever slice of the features they are given,
#: such as one rank's shard under tensor parallelism, which must hold whole
#: groups. A positive ``num_features`` must equal the input's width.
LOCAL_WIDTH = -1


def _is_dtensor(t: Tensor) -> bool:
    """Whether t is a torch.distributed DTensor (without importing
    torch.distributed where nothing has: a DTensor's class is then loaded)."""
    cls = type(t)
    return cls.__name__ == "DTensor" and cls.__module__.startswith("torch.distributed")


def _check_group(num_features: int, num_per_group: int) -> None:
    if not isinstance(num_per_group, int) or isinstance(num_per_group, bool):
        raise TypeError(f"pln: num_per_group must be an int, got {type(num_per_group).__name__}")
    if num_per_group <= 0 or num_features % num_per_group != 0:
        raise ValueError(f"pln: num_per_group ({num_per_group}) must be a positive divisor of the "
                         f"number of features ({num_features})")


_HALF = (torch.float16, torch.bfloat16)


def _has_tangent(*tensors: Optional[Tensor]) -> bool:
    """Whether forward-mode AD carries a tangent on any of the tensors."""
    import torch.autograd.forward_ad as fwAD
    if fwAD._current_level < 0:
        return False
    return any(t is not None and fwAD.unpack_dual(t).tangent is not None for t in tensors)


def _transformed(*tensors: Optional[Tensor]) -> bool:
    """Whether a torch.func transform or forward-mode AD sees any of the tensors."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling") and compiler.is_compiling():
        return False  # traced by torch.compile / torch.export: the fused operators
    try:
        from torch._C._functorch import is_functorch_wrapped_tensor
    except ImportError:  # torch 1.13 has no torch.func
        return False
    return any(t is not None and is_functorch_wrapped_tensor(t) for t in tensors) or _has_tangent(*tensors)


def _onnx_exporting() -> bool:
    """Inside torch.onnx.export (dynamo=True as well): the formulas as ATen
    operations, which the exporter writes as standard ONNX operators, so that
    torch.onnx.export needs nothing but ``import pln`` (pln.onnx translates
    torch.ops.pln.* called directly)."""
    onnx = getattr(torch, "onnx", None)
    return bool(onnx is not None and hasattr(onnx, "is_in_onnx_export") and onnx.is_in_onnx_export())


def _composite(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], num_per_group: int,
               eps: float, centering: bool, p: float, q: Optional[float], axis: int,
               layer_norm: bool = False) -> Tensor:
    """The operator's formulation in ATen operations, for the tracers that must
    see those rather than the fused operators (torch.func transforms, forward-mode
    AD, ONNX export): ``torch.ops.pln.parallel_ln_composite``, the C++
    formulation as a CompositeImplicitAutograd operator, which decomposes into
    them (and which a vmap rule below batches). For ONNX, a centred p = 2 norm
    is ATen's layer_norm instead, which the exporter makes one
    LayerNormalization of (not for torch.func: ATen's layer_norm has wrong
    third derivatives)."""
    x = input.movedim(axis, -1)
    shape = x.shape
    width = int(shape[-1])
    if layer_norm and centering and p == 2 and q in (None, 2.0):
        dtype = input.dtype
        compute = torch.float32 if dtype in _HALF else dtype
        g = x.to(compute).reshape(*shape[:-1], width // num_per_group, num_per_group)
        y = torch.nn.functional.layer_norm(g, (num_per_group,), eps=eps).reshape(shape)
        if weight is not None:
            y = y * weight.to(compute).reshape(-1)
        if bias is not None:
            y = y + bias.to(compute).reshape(-1)
        return y.movedim(-1, axis).to(dtype)
    y = torch.ops.pln.parallel_ln_composite(x.reshape(-1, width), weight, bias, width, num_per_group, p,
                                            p if q is None else q, eps, centering, "nc")
    return y.reshape(shape).movedim(-1, axis)


def _batched(x: Tensor, dim: Optional[int], size: int) -> Tensor:
    """A vmap rule's operand with its batch dimension first (expanded where it has none)."""
    return x.movedim(dim, 0) if dim is not None else x.expand(size, *x.shape)


def _parallel_ln_composite_vmap(info, in_dims, input, weight, bias, num_features, num_per_group, p, q, eps,
                                centering, layout):
    """vmap of pln::parallel_ln_composite: the batch joins the input's first
    (N) axis, which every layout has; batched parameters are applied after the
    norm, in the compute type, rounded once."""
    x = _batched(input, in_dims[0], info.batch_size)
    rows = x.reshape(-1, *x.shape[2:])
    if in_dims[1] is None and in_dims[2] is None:
        y = torch.ops.pln.parallel_ln_composite(rows, weight, bias, num_features, num_per_group, p, q, eps,
                                                centering, layout)
        return y.reshape(x.shape), 0
    compute = torch.float32 if x.dtype in _HALF else x.dtype
    y = torch.ops.pln.parallel_ln_composite(rows.to(compute), None, None, num_features, num_per_group, p, q, eps,
                                            centering, layout).reshape(x.shape)
    axis = FIXED_LAYOUTS[layout][1] + 1
    for param, dim, combine in ((weight, in_dims[1], torch.mul), (bias, in_dims[2], torch.add)):
        if param is not None:
            batched = _batched(param.to(compute), dim, info.batch_size).reshape(info.batch_size, -1)
            view = [info.batch_size] + [1] * (x.dim() - 1)
            view[axis] = batched.shape[1]
            y = combine(y, batched.reshape(view))
    return y.to(x.dtype), 0


def _gated_norm_composite_vmap(info, in_dims, input, gate, weight, bias, num_features, num_per_group, eps,
                               centering, gate_position, activation):
    """vmap of pln::gated_norm_composite (features last, any leading rank): the
    batch joins the leading axes; with batched parameters, one call a sample."""
    x, z = _batched(input, in_dims[0], info.batch_size), _batched(gate, in_dims[1], info.batch_size)
    if in_dims[2] is None and in_dims[3] is None:
        return torch.ops.pln.gated_norm_composite(x, z, weight, bias, num_features, num_per_group, eps, centering,
                                                  gate_position, activation), 0
    w = None if weight is None else _batched(weight, in_dims[2], info.batch_size)
    b = None if bias is None else _batched(bias, in_dims[3], info.batch_size)
    return torch.stack([torch.ops.pln.gated_norm_composite(x[i], z[i], None if w is None else w[i],
                                                           None if b is None else b[i], num_features,
                                                           num_per_group, eps, centering, gate_position,
                                                           activation)
                        for i in range(info.batch_size)]), 0


def _register_vmap_rules() -> None:
    """Batching rules of the composite operators (torch 2.4 and later; before,
    vmap runs them a sample at a time)."""
    register = getattr(torch.library, "register_vmap", None)
    if register is None:
        return
    register("pln::parallel_ln_composite", _parallel_ln_composite_vmap)
    register("pln::gated_norm_composite", _gated_norm_composite_vmap)


def _run(input: Tensor, num_per_group: int, weight: Optional[Tensor], bias: Optional[Tensor],
         eps: float, centering: bool, p: float, q: Optional[float], layout: str,
         num_features: Optional[int] = None) -> Tensor:
    """num_features: a module's; the operator reports an input that has another count."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pln: input must be a Tensor, got {type(input).__name__}")
    axis = _feature_axis(input, layout)
    wrong_rank = layout in FIXED_LAYOUTS and input.dim() != FIXED_LAYOUTS[layout][0]
    if num_features is None:
        if wrong_rank:  # the operator reports the rank it expects
            num_features = int(input.shape[axis]) if input.dim() > axis else num_per_group
        else:
            num_features = int(input.shape[axis])
            _check_group(num_features, num_per_group)
    elif not wrong_rank and int(input.shape[axis]) != num_features and (_onnx_exporting() or _transformed(input)):
        raise RuntimeError(f"pln: expected {num_features} features on axis {axis} of the input, "
                           f"got {int(input.shape[axis])} (input shape {tuple(input.shape)})")
    exporting = _onnx_exporting()
    if exporting or _transformed(input, weight, bias):
        if wrong_rank:
            raise ValueError(f"pln: layout {layout} expects a {FIXED_LAYOUTS[layout][0]}-D input, "
                             f"got a {input.dim()}-D input of shape {tuple(input.shape)}")
        return _composite(input, weight, bias, num_per_group, float(eps), bool(centering), float(p),
                          None if q is None else float(q), axis, layer_norm=exporting)
    x, op_layout = _as_op_layout(input, layout)
    if _is_dtensor(input):
        from . import distributed
        distributed.register()
        # The operators run on each rank's shard: the feature count comes from
        # the local input (LOCAL_WIDTH), checked here against the global one.
        if not wrong_rank and int(input.shape[axis]) != num_features:
            raise RuntimeError(f"pln: expected {num_features} features on axis {axis} of the input, "
                               f"got {int(input.shape[axis])} (input shape {tuple(input.shape)})")
        num_features = LOCAL_WIDTH
    if q is None:
        y = torch.ops.pln.parallel_ln(x, weight, bias, num_features, num_per_group, float(eps),
                                      bool(centering), op_layout, float(p))
    else:
        y = torch.ops.pln.pq_norm(x, weight, bias, num_features, num_per_group, float(p), float(q),
                                  float(eps), bool(centering), op_layout)
    return y if y.dim() == input.dim() else y.reshape(input.shape)


def parallel_ln(input: Tensor, num_per_group: int, weight: Optional[Tensor] = None,
                bias: Optional[Tensor] = None, eps: float = 1e-5, *, centering: bool = True,
                p: float = 2.0, layout: str = "features_last") -> Tensor:
    r"""Parallel Layer Normalization: Layer Normalization over each group of
    ``num_per_group`` consecutive features, separately at every position.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{(\mathrm{E}[|x - \mathrm{E}[x]|^p] + \epsilon)^{1/p}}
            * \mathrm{weight} + \mathrm{bias}

    with the mean taken over one group of one position. ``num_per_group``
    equal to the feature count is ``torch.nn.functional.layer_norm`` over the
    features.

    Args:
        input: the tensor; its features are on the axis ``layout`` names.
        num_per_group: features per group; must divide the feature count.
        weight: per-feature scale, ``C`` elements (any shape), or ``None``.
        bias: per-feature shift, ``C`` elements (any shape), or ``None``.
        eps: added to the group statistic before the root. Default: ``1e-5``.
        centering: subtract each group's mean; ``False`` is :func:`pls`.
        p: exponent of the group statistic (``p >= 1``). Default: ``2``.
        layout: ``"features_last"`` (default: ``[..., C]``, any leading rank),
            ``"features_first"`` (``[N, C, ...]``), or one of the operators'
            ``"nc"``, ``"ntc"``, ``"nchw"``, ``"nhwc"``, ``"ncl"``.

    Returns:
        A tensor shaped like ``input``.
    """
    return _run(input, num_per_group, weight, bias, eps, centering, p, None, layout)


def pls(input: Tensor, num_per_group: int, weight: Optional[Tensor] = None,
        bias: Optional[Tensor] = None, eps: float = 1e-5, *, p: float = 2.0,
        layout: str = "features_last") -> Tensor:
    r"""Parallel layer scaling: :func:`parallel_ln` without centering,
    :math:`y = x / (\mathrm{E}[|x|^p] + \epsilon)^{1/p}` per group (RMSNorm
    per group for ``p = 2``). Arguments as for :func:`parallel_ln`."""
    return _run(input, num_per_group, weight, bias, eps, False, p, None, layout)


def pq_norm(input: Tensor, num_per_group: int, weight: Optional[Tensor] = None,
            bias: Optional[Tensor] = None, eps: float = 1e-5, *, p: float = 2.0, q: float = 2.0,
            centering: bool = True, layout: str = "features_last") -> Tensor:
    r"""PQNorm over groups of ``num_per_group`` features:

    .. math::
        y = \frac{\mathrm{sign}(x_c)\,|x_c|^{p/q}}{(\mathrm{E}[|x_c|^p] + \epsilon)^{1/q}}
            * \mathrm{weight} + \mathrm{bias}, \qquad x_c = x - \mathrm{E}[x]

    ``p = q = 2`` is :func:`parallel_ln`. Other arguments as for :func:`parallel_ln`.
    """
    return _run(input, num_per_group, weight, bias, eps, centering, p, q, layout)


def gated_norm(input: Tensor, gate: Tensor, num_per_group: int, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5, *, centering: bool = False,
               gate_position: str = "before", activation: str = "silu") -> Tensor:
    r"""The gated norm of the state-space and linear-attention hybrids, features
    last, over groups of ``num_per_group`` features, with a gate shaped like the input:

    - ``gate_position="before"`` (Mamba-2's ``MambaRMSNormGated``):
      :math:`y = \mathrm{norm}(x \cdot \mathrm{act}(z)) \cdot w + b`;
    - ``gate_position="after"`` (Gated DeltaNet's ``Qwen3NextRMSNormGated``):
      :math:`y = (\mathrm{norm}(x) \cdot w + b) \cdot \mathrm{act}(z)`;

    where norm is :func:`pls` (``centering=False``, the default: an RMS norm
    per group) or :func:`parallel_ln`, and act is ``"silu"`` or ``"sigmoid"``.
    Float16 and bfloat16 are computed in float32 and rounded once, as the
    models' classes do. Runs ``torch.ops.pln.gated_norm``: fused CPU kernels
    for float32 and float64, one pass over ``x`` and ``z`` forward and one over
    ``x``, ``z`` and the output's gradient backward; the composite ATen
    formulation elsewhere and under ``torch.func`` transforms.
    """
    if not isinstance(input, Tensor) or not isinstance(gate, Tensor):
        raise TypeError("pln: gated_norm's input and gate must be Tensors")
    if input.dim() < 1:
        raise ValueError("pln: gated_norm's input needs at least 1 dimension (features last)")
    width = int(input.shape[-1])
    _check_group(width, num_per_group)
    if input.dtype != gate.dtype:
        # A gate of another dtype (a bfloat16 gate beside a float32 scan
        # output): computed in float32 (or wider), in the input's dtype at the
        # end, as the models' classes do. Parameters of any float dtype the
        # operator takes as they are (computed in the input's compute type).
        dtype = input.dtype
        wide = torch.promote_types(torch.promote_types(input.dtype, gate.dtype), torch.float32)
        return gated_norm(input.to(wide), gate.to(wide), num_per_group, weight, bias, eps, centering=centering,
                          gate_position=gate_position, activation=activation).to(dtype)
    if _onnx_exporting() or _transformed(input, gate, weight, bias):
        if gate_position not in ("before", "after") or activation not in ("silu", "sigmoid"):
            raise ValueError(f"pln: gated_norm takes gate_position 'before' or 'after' and activation 'silu' or "
                             f"'sigmoid', got {gate_position!r} and {activation!r}")
        return _gated_composite(input, gate, num_per_group, weight, bias, float(eps), bool(centering),
                                gate_position == "before", activation == "sigmoid")
    if _is_dtensor(input):
        from . import distributed
        distributed.register()
        width = LOCAL_WIDTH  # each rank's kernel takes the feature count from its shard
    return torch.ops.pln.gated_norm(input, gate, weight, bias, width, num_per_group, float(eps), bool(centering),
                                    gate_position, activation)


def _gated_composite(x: Tensor, z: Tensor, g: int, weight: Optional[Tensor], bias: Optional[Tensor], eps: float,
                     centering: bool, before: bool, sigmoid: bool) -> Tensor:
    """The gated norm's formulation in ATen operations, for tracers (see
    _composite): ``torch.ops.pln.gated_norm_composite``, the C++ formulation
    as a CompositeImplicitAutograd operator, computed in float32 for
    half-precision inputs as the operator does."""
    return torch.ops.pln.gated_norm_composite(x, z, weight, bias, int(x.shape[-1]), g, eps, centering,
                                              "before" if before else "after", "sigmoid" if sigmoid else "silu")