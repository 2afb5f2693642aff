"""The operators' registrations the stable-ABI library leaves to Python.

The package's build over LibTorch's stable ABI (``libpln_stable.so``, one
build for every torch from 2.10 on) declares the schemas of
``src/ops/schemas.h`` and registers the fused CPU kernels of the forward and
backward ops, and the composite formulations. The stable ABI has no autograd,
symbolic shapes or autocast keys in C++, so this module registers, with
``torch.library``, what libpln registers in C++ (``src/ops/parallel_ln.cpp``,
``gated_norm.cpp``):

- the route of each op under autograd (``src/ops/autograd_support.h``): below
  autograd where nothing records the call, an ``autograd.Function`` over the
  fused forward and backward ops, or the composite formulation, recorded by
  autograd, for forward-mode tangents and inputs the fused kernels do not take;
- the composite kernels (any p, device and dtype, differentiable to any
  order), which also run on every device but the CPU: the checks, then the
  library's composite formulation (``src/ops/formulation.h``, libpln's too),
  an op of its own that reads no size, as the stable ABI reads none where
  they are symbolic;
- the fake kernels (shapes, dtypes and strides for FakeTensor, torch.compile
  and torch.export), with the checks of the C++ kernels and their messages;
- autocast: the input keeps its dtype, the parameters follow it.

libpln (the C++ library, and the Python package built against one torch)
registers all of this itself; this module runs only over the stable build.
"""

import math
from typing import List, NamedTuple, Optional, Tuple

import torch
from torch import Tensor

from .functional import FIXED_LAYOUTS as _FIXED
from .functional import _has_tangent

_SHAPE_NAMES = {"nc": "[N, C]", "ntc": "[N, T, C]", "nchw": "[N, C, H, W]", "nhwc": "[N, H, W, C]",
                "ncl": "[N, C, L]"}
_KERNEL_TYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# LibTorch's names of the dtypes, as the C++ kernels' errors print them.
_DTYPE_NAMES = {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16",
                torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
                torch.uint8: "Byte", torch.bool: "Bool", torch.complex64: "ComplexFloat",
                torch.complex128: "ComplexDouble"}


def _fail(*parts) -> None:
    raise RuntimeError("".join(str(p) for p in parts))


def _check(ok: bool, *parts) -> None:
    if not ok:
        _fail(*parts)


def _dtype(t: Tensor) -> str:
    return _DTYPE_NAMES.get(t.dtype, str(t.dtype).replace("torch.", ""))


def _shape(t: Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _device(t: Tensor) -> str:
    return str(t.device)


def fused_kernels_take(input: Tensor, p: float = 2.0) -> bool:
    """Whether the fused kernels take the input: on the CPU, strided float32,
    float64, float16 and bfloat16 tensors with p = 2 (this build has no CUDA
    kernels: the composite formulation runs there)."""
    return (p == 2.0 and input.layout == torch.strided and input.device.type == "cpu"
            and input.dtype in _KERNEL_TYPES)


def _stats_type(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


# ------------------------------------------------------------------ checks ---

class Spec(NamedTuple):
    num_features: int  # <= 0 until check_tensors resolves it: the input's width
    num_per_group: int
    eps: float
    centering: bool
    layout: str
    p: float = 2.0
    q: float = 2.0


def checked_spec(num_features: int, num_per_group: int, eps: float, centering: bool, layout: str,
                 p: float = 2.0, q: float = 2.0) -> Spec:
    lower = layout.lower()
    _check(lower in _FIXED, f"pln: unknown layout '{layout}'; expected one of nc, ntc, nchw, nhwc, ncl")
    from_input = num_features <= 0
    declared = num_per_group if from_input else num_features
    _check(declared > 0, "pln: num_features must be positive, got ", declared)
    _check(num_per_group > 0, "pln: num_per_group must be positive, got ", num_per_group)
    _check(declared % num_per_group == 0, f"pln: num_features ({declared}) must be divisible by num_per_group "
           f"({num_per_group})")
    _check(eps >= 0.0, "pln: eps must be >= 0, got ", eps)
    _check(p >= 1.0, "pln: p must be >= 1, got ", p)
    _check(q >= 1.0, "pln: q must be >= 1, got ", q)
    return Spec(0 if from_input else num_features, num_per_group, eps, centering, lower, p, q)


def _param_type_fits(param: torch.dtype, input: torch.dtype) -> bool:
    if param == input:
        return True
    if not param.is_floating_point:
        return False
    if input in (torch.float16, torch.bfloat16):
        return param == torch.float32
    return param.itemsize < input.itemsize


def _check_param(p: Optional[Tensor], name: str, x: Tensor, num_features: int) -> None:
    if p is None:
        return
    _check(p.numel() == num_features, f"pln: {name} must have {num_features} elements (num_features), got "
           f"{p.numel()} (shape {_shape(p)})")
    _check(_param_type_fits(p.dtype, x.dtype), f"pln: {name} has dtype {_dtype(p)} but the input has dtype "
           f"{_dtype(x)} (the parameters take the input's dtype, float32 with a float16 or bfloat16 input, or a "
           "narrower floating type, which is widened)")
    _check(p.device == x.device, f"pln: {name} is on {_device(p)} but the input is on {_device(x)}")


def check_tensors(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], spec: Spec) -> Spec:
    _check(x.is_floating_point(), "pln: expected a floating-point input, got dtype ", _dtype(x))
    rank, axis = _FIXED[spec.layout]
    _check(x.dim() == rank, f"pln: layout {spec.layout.upper()} expects a {rank}-D input "
           f"{_SHAPE_NAMES[spec.layout]}, got a {x.dim()}-D input of shape {_shape(x)}")
    width = x.shape[axis]
    if spec.num_features <= 0:
        _check(width > 0 and width % spec.num_per_group == 0,
               f"pln: the input's width, {width} features on axis {axis} of the {spec.layout.upper()} input "
               f"(num_features = {spec.num_features}: the input's width), is not a whole number of groups of "
               f"num_per_group = {spec.num_per_group} features; a shard of the features must hold whole groups "
               f"(input shape {_shape(x)})")
        spec = spec._replace(num_features=int(width))
    _check(width == spec.num_features, f"pln: expected {spec.num_features} features on axis {axis} of the "
           f"{spec.layout.upper()} input, got {width} (input shape {_shape(x)})")
    _check_param(weight, "weight", x, spec.num_features)
    _check_param(bias, "bias", x, spec.num_features)
    return spec


def stats_shape(x: Tensor, spec: Spec) -> List:
    shape = list(x.shape)
    shape[_FIXED[spec.layout][1]] = spec.num_features // spec.num_per_group
    return shape


def check_backward_tensors(grad_output: Tensor, x: Tensor, mean: Tensor, rstd: Tensor,
                           weight: Optional[Tensor], spec: Spec) -> Spec:
    spec = check_tensors(x, weight, None, spec)
    for t, name in ((grad_output, "grad_output"), (mean, "mean"), (rstd, "rstd")):
        _check(t.device == x.device, f"pln::parallel_ln_backward: {name} is on {_device(t)} but the input is on "
               f"{_device(x)}")
    _check(grad_output.shape == x.shape, f"pln::parallel_ln_backward: grad_output has shape {_shape(grad_output)} "
           f"but the input has shape {_shape(x)}")
    _check(grad_output.dtype == x.dtype, f"pln::parallel_ln_backward: grad_output has dtype {_dtype(grad_output)} "
           f"but the input has dtype {_dtype(x)}")
    shape, stats = stats_shape(x, spec), _stats_type(x.dtype)
    for s in (mean, rstd):
        _check(list(s.shape) == shape and s.dtype == stats, "pln::parallel_ln_backward: expected the forward's "
               f"statistics, {_DTYPE_NAMES[stats]} of shape [{', '.join(str(n) for n in shape)}], got shape "
               f"{_shape(s)} and dtype {_dtype(s)}")
    return spec


# --------------------------------------------------------------- composite ---

def output_format(x: Tensor, layout: str) -> torch.memory_format:
    if layout == "nchw" and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    return torch.contiguous_format


def formulation(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], spec: Spec) -> Tensor:
    """Parallel LN (PQNorm beyond p = q = 2) after the checks: the library's
    formulation (src/ops/formulation.h, libpln's too), in ATen ops."""
    return torch.ops.pln.parallel_ln_formulation(input, weight, bias, _FIXED[spec.layout][1], spec.num_per_group,
                                                 spec.p, spec.q, spec.eps, spec.centering)


def gradient_formulation(grad_output: Tensor, input: Tensor, weight: Optional[Tensor],
                         spec: Spec) -> Tuple[Tensor, Tensor, Tensor]:
    """The p = 2 gradients after the checks, in differentiable ATen ops (a
    create_graph backward through the fused op differentiates them)."""
    return torch.ops.pln.parallel_ln_gradient_formulation(grad_output, input, weight, _FIXED[spec.layout][1],
                                                          spec.num_per_group, spec.eps, spec.centering)


def composite(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], spec: Spec) -> Tensor:
    """The checks, then the formulation, in the fused kernels' output format (the fake kernels')."""
    spec = check_tensors(input, weight, bias, spec)
    return formulation(input, weight, bias, spec).contiguous(memory_format=output_format(input, spec.layout))


# ---------------------------------------------------------------- autograd ---

def _requires_grad(*tensors) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


_BELOW, _FUNCTION, _COMPOSITE = range(3)


def route(fused: bool, *tensors) -> int:
    """src/ops/autograd_support.h's route: composite for a tangent, below
    autograd where nothing records, the Function where the kernels take it."""
    if _has_tangent(*tensors):
        return _COMPOSITE
    if not _requires_grad(*tensors):
        return _BELOW
    return _FUNCTION if fused else _COMPOSITE


class _ParallelLNFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias, num_features, num_per_group, eps, centering, layout):
        with torch._C._AutoDispatchBelowAutograd():
            output, mean, rstd = torch.ops.pln.parallel_ln_forward(input, weight, bias, num_features, num_per_group,
                                                                   eps, centering, layout)
        ctx.save_for_backward(input, weight, mean, rstd)
        ctx.mark_non_differentiable(mean, rstd)
        ctx.set_materialize_grads(False)
        ctx.bias_shape = None if bias is None else bias.shape
        ctx.args = (num_features, num_per_group, eps, centering, layout)
        return output, mean, rstd

    @staticmethod
    def backward(ctx, grad_output, _grad_mean, _grad_rstd):
        if grad_output is None:
            return (None,) * 8
        input, weight, mean, rstd = ctx.saved_tensors
        dx, dw, db = torch.ops.pln.parallel_ln_backward(grad_output, input, mean, rstd, weight, *ctx.args)
        needs = ctx.needs_input_grad
        return (dx if needs[0] else None,
                dw.reshape(weight.shape) if weight is not None and needs[1] else None,
                db.reshape(ctx.bias_shape) if ctx.bias_shape is not None and needs[2] else None,
                None, None, None, None, None)


def _parallel_ln_elsewhere(input, weight, bias, num_features, num_per_group, eps=1e-5, centering=True,
                           layout="nchw", p=2.0):
    """Every device but the CPU (whose kernel is the library's): the composite formulation."""
    spec = checked_spec(num_features, num_per_group, eps, centering, layout, p, p)
    return composite(input, weight, bias, spec)


def _parallel_ln_autograd(input, weight, bias, num_features, num_per_group, eps=1e-5, centering=True,
                          layout="nchw", p=2.0):
    way = route(fused_kernels_take(input, p), input, weight, bias)
    if way == _BELOW:
        with torch._C._AutoDispatchBelowAutograd():
            return torch.ops.pln.parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering,
                                             layout, p)
    if way == _FUNCTION:  # what parallel_ln_forward's own autograd kernel runs, without its dispatch
        return _ParallelLNFunction.apply(input, weight, bias, num_features, num_per_group, eps, centering, layout)[0]
    return composite(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout, p, p))


def _pq_norm(input, weight, bias, num_features, num_per_group, p=2.0, q=2.0, eps=1e-5, centering=True,
             layout="nchw"):
    if p == 2.0 and q == 2.0:
        return torch.ops.pln.parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering, layout, p)
    spec = checked_spec(num_features, num_per_group, eps, centering, layout, p, q)
    return composite(input, weight, bias, spec)


def _pq_norm_autograd(input, weight, bias, num_features, num_per_group, p=2.0, q=2.0, eps=1e-5, centering=True,
                      layout="nchw"):
    if p == 2.0 and q == 2.0:
        return torch.ops.pln.parallel_ln(input, weight, bias, num_features, num_per_group, eps, centering, layout, p)
    if route(fused_kernels_take(input, p), input, weight, bias) == _BELOW:
        with torch._C._AutoDispatchBelowAutograd():
            return torch.ops.pln.pq_norm(input, weight, bias, num_features, num_per_group, p, q, eps, centering,
                                         layout)
    return composite(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout, p, q))


def _parallel_ln_forward_autograd(input, weight, bias, num_features, num_per_group, eps=1e-5, centering=True,
                                  layout="nchw"):
    return _ParallelLNFunction.apply(input, weight, bias, num_features, num_per_group, eps, centering, layout)


def _parallel_ln_backward_autograd(grad_output, input, mean, rstd, weight, num_features, num_per_group, eps=1e-5,
                                   centering=True, layout="nchw"):
    if route(fused_kernels_take(input), grad_output, input, weight) == _BELOW:
        with torch._C._AutoDispatchBelowAutograd():
            return torch.ops.pln.parallel_ln_backward(grad_output, input, mean, rstd, weight, num_features,
                                                      num_per_group, eps, centering, layout)
    # A graph of the gradient (or its tangent) is wanted: the gradient's
    # formulation, which autograd differentiates (the statistics recomputed).
    spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                  checked_spec(num_features, num_per_group, eps, centering, layout))
    dx, dweight, dbias = gradient_formulation(grad_output, input, weight, spec)
    return dx.contiguous(memory_format=output_format(input, spec.layout)), dweight, dbias


def _parallel_ln_composite(input, weight, bias, num_features, num_per_group, p=2.0, q=2.0, eps=1e-5, centering=True,
                           layout="nchw"):
    spec = checked_spec(num_features, num_per_group, eps, centering, layout, p, q)
    return composite(input, weight, bias, spec)


# -------------------------------------------------------------------- fake ---

def _like_input(input: Tensor, layout: str) -> Tensor:
    return torch.empty_like(input, memory_format=output_format(input, layout))


def _fake_parallel_ln(input, weight, bias, num_features, num_per_group, eps=1e-5, centering=True, layout="nchw",
                      p=2.0):
    spec = check_tensors(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout, p))
    return _like_input(input, spec.layout)


def _fake_pq_norm(input, weight, bias, num_features, num_per_group, p=2.0, q=2.0, eps=1e-5, centering=True,
                  layout="nchw"):
    spec = check_tensors(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout, p, q))
    return _like_input(input, spec.layout)


def _fake_parallel_ln_forward(input, weight, bias, num_features, num_per_group, eps=1e-5, centering=True,
                              layout="nchw"):
    spec = check_tensors(input, weight, bias, checked_spec(num_features, num_per_group, eps, centering, layout))
    fmt = output_format(input, spec.layout)
    stats = input.new_empty(stats_shape(input, spec), dtype=_stats_type(input.dtype))
    return (_like_input(input, spec.layout), stats.contiguous(memory_format=fmt),
            stats.clone().contiguous(memory_format=fmt))


def _fake_parallel_ln_backward(grad_output, input, mean, rstd, weight, num_features, num_per_group, eps=1e-5,
                               centering=True, layout="nchw"):
    spec = check_backward_tensors(grad_output, input, mean, rstd, weight,
                                  checked_spec(num_features, num_per_group, eps, centering, layout))
    params = weight.dtype if weight is not None else input.dtype
    return (_like_input(input, spec.layout), input.new_empty(spec.num_features, dtype=params),
            input.new_empty(spec.num_features, dtype=params))


# ---------------------------------------------------------------- autocast ---

_AUTOCAST_KEYS = (torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
                  | torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCUDA))


def _autocast_param(t: Optional[Tensor], input: Tensor) -> Optional[Tensor]:
    if t is None or _param_type_fits(t.dtype, input.dtype):
        return t
    return t.to(_stats_type(input.dtype))


def _parallel_ln_autocast(input, weight, bias, num_features, num_per_group, eps=1e-5, centering=True, layout="nchw",
                          p=2.0):
    with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEYS):
        return torch.ops.pln.parallel_ln(input, _autocast_param(weight, input), _autocast_param(bias, input),
                                         num_features, num_per_group, eps, centering, layout, p)


def _pq_norm_autocast(input, weight, bias, num_features, num_per_group, p=2.0, q=2.0, eps=1e-5, centering=True,
                      layout="nchw"):
    with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEYS):
        return torch.ops.pln.pq_norm(input, _autocast_param(weight, input), _autocast_param(bias, input),
                                     num_features, num_per_group, p, q, eps, centering, layout)


# -------------------------------------------------------------- gated norm ---

class GatedSpec(NamedTuple):
    num_features: int
    num_per_group: int
    eps: float
    centering: bool
    gate_before: bool
    sigmoid: bool

    @property
    def groups(self) -> int:
        return self.num_features // self.num_per_group


def gated_checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                  activation) -> GatedSpec:
    """src/ops/gated_norm.cpp's checked, with its messages."""
    _check(gate_position in ("before", "after"), "pln::gated_norm: gate_position must be 'before' or 'after' "
           f"(the norm), got '{gate_position}'")
    _check(activation in ("silu", "sigmoid"), "pln::gated_norm: activation must be 'silu' or 'sigmoid', got "
           f"'{activation}'")
    _check(input.dim() >= 1, "pln::gated_norm: the input needs at least 1 dimension (features last)")
    _check(input.is_floating_point(), "pln::gated_norm: the input must be floating point, got ", _dtype(input))
    _check(gate.shape == input.shape, f"pln::gated_norm: the gate has shape {_shape(gate)} but the input has shape "
           f"{_shape(input)}; they must be equal")
    _check(gate.dtype == input.dtype and gate.device == input.device, f"pln::gated_norm: the gate is {_dtype(gate)} "
           f"on {_device(gate)} but the input is {_dtype(input)} on {_device(input)}")
    width = input.shape[-1]
    if num_features <= 0:
        num_features = width
    _check(num_features == width, f"pln::gated_norm: expected {num_features} features on the last axis, got "
           f"{width} (input shape {_shape(input)})")
    _check(num_features > 0, f"pln::gated_norm: the input has no features on its last axis (shape {_shape(input)}); "
           "a group needs at least one")
    _check(num_per_group > 0 and num_features % num_per_group == 0, f"pln::gated_norm: num_per_group "
           f"({num_per_group}) must be a positive divisor of the number of features ({num_features})")
    _check(eps >= 0 and math.isfinite(eps), "pln::gated_norm: eps must be finite and >= 0, got ", eps)
    for p, name in ((weight, "weight"), (bias, "bias")):
        if p is None:
            continue
        _check(p.numel() == num_features, f"pln::gated_norm: {name} has {p.numel()} elements, expected "
               f"{num_features}")
        _check(p.device == input.device, f"pln::gated_norm: {name} is on {_device(p)} but the input is on "
               f"{_device(input)}")
    return GatedSpec(int(num_features), num_per_group, eps, centering, gate_position == "before",
                     activation == "sigmoid")


def _gating(s: GatedSpec) -> Tuple:
    return s.num_per_group, s.eps, s.centering, s.gate_before, s.sigmoid


def gated_composite_forward(input, gate, weight, bias, s: GatedSpec) -> Tensor:
    return torch.ops.pln.gated_norm_formulation(input, gate, weight, bias, *_gating(s))


def gated_composite_backward(grad_output, input, gate, weight, bias, s: GatedSpec):
    return torch.ops.pln.gated_norm_gradient_formulation(grad_output, input, gate, weight, bias, *_gating(s))


class _GatedNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, gate, weight, bias, *args):
        with torch._C._AutoDispatchBelowAutograd():
            y, mean, rstd = torch.ops.pln.gated_norm_forward(input, gate, weight, bias, *args)
        ctx.save_for_backward(input, gate, weight, bias, mean, rstd)
        ctx.args = args
        return y

    @staticmethod
    def backward(ctx, grad_output):
        input, gate, weight, bias, mean, rstd = ctx.saved_tensors
        dx, dz, dw, db = torch.ops.pln.gated_norm_backward(grad_output, input, gate, mean, rstd, weight, bias,
                                                           *ctx.args)
        needs = ctx.needs_input_grad
        return ((dx if needs[0] else None), (dz if needs[1] else None),
                dw.reshape(weight.shape) if weight is not None and needs[2] else None,
                db.reshape(bias.shape) if bias is not None and needs[3] else None) + (None,) * len(ctx.args)


def _gated_norm_autograd(input, gate, weight, bias, num_features, num_per_group, eps=1e-5, centering=False,
                         gate_position="before", activation="silu"):
    args = (num_features, num_per_group, eps, centering, gate_position, activation)
    way = route(fused_kernels_take(input), input, gate, weight, bias)
    if way == _BELOW:
        with torch._C._AutoDispatchBelowAutograd():
            return torch.ops.pln.gated_norm(input, gate, weight, bias, *args)
    if way == _FUNCTION:
        return _GatedNormFunction.apply(input, gate, weight, bias, *args)
    return gated_composite_forward(input, gate, weight, bias,
                                   gated_checked(input, gate, weight, bias, *args)).contiguous()


def _gated_norm_forward_autograd(input, gate, weight, bias, num_features, num_per_group, eps=1e-5, centering=False,
                                 gate_position="before", activation="silu"):
    # Called below _GatedNormFunction only; the statistics carry no gradient.
    with torch._C._AutoDispatchBelowAutograd():
        return torch.ops.pln.gated_norm_forward(input, gate, weight, bias, num_features, num_per_group, eps,
                                                centering, gate_position, activation)


def _gated_norm_backward_autograd(grad_output, input, gate, mean, rstd, weight, bias, num_features, num_per_group,
                                  eps=1e-5, centering=False, gate_position="before", activation="silu"):
    args = (num_features, num_per_group, eps, centering, gate_position, activation)
    if route(fused_kernels_take(input), grad_output, input, gate, weight, bias) == _BELOW:
        with torch._C._AutoDispatchBelowAutograd():
            return torch.ops.pln.gated_norm_backward(grad_output, input, gate, mean, rstd, weight, bias, *args)
    # A graph of the gradient is wanted: the composite formulas, which autograd differentiates.
    s = gated_checked(input, gate, weight, bias, *args)
    dx, dgate, dweight, dbias = gated_composite_backward(grad_output, input, gate, weight, bias, s)
    return dx.contiguous(), dgate.contiguous(), dweight, dbias


def _gated_norm_composite(input, gate, weight, bias, num_features, num_per_group, eps=1e-5, centering=False,
                          gate_position="before", activation="silu"):
    s = gated_checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                      activation)
    return gated_composite_forward(input, gate, weight, bias, s).contiguous()


def _fake_gated_norm(input, gate, weight, bias, num_features, num_per_group, eps=1e-5, centering=False,
                     gate_position="before", activation="silu"):
    gated_checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position, activation)
    return torch.empty_like(input, memory_format=torch.contiguous_format)


def _fake_gated_norm_forward(input, gate, weight, bias, num_features, num_per_group, eps=1e-5, centering=False,
                             gate_position="before", activation="silu"):
    s = gated_checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                      activation)
    shape = list(input.shape[:-1]) + [s.groups]
    return (torch.empty_like(input, memory_format=torch.contiguous_format), input.new_empty(shape),
            input.new_empty(shape))


def _fake_gated_norm_backward(grad_output, input, gate, mean, rstd, weight, bias, num_features, num_per_group,
                              eps=1e-5, centering=False, gate_position="before", activation="silu"):
    s = gated_checked(input, gate, weight, bias, num_features, num_per_group, eps, centering, gate_position,
                      activation)
    _check(grad_output.shape == input.shape and grad_output.dtype == input.dtype,
           f"pln::gated_norm_backward: grad_output is {_dtype(grad_output)} of shape {_shape(grad_output)}, the "
           f"input {_dtype(input)} of shape {_shape(input)}")
    _check(mean.numel() * s.num_per_group == input.numel() and rstd.numel() == mean.numel()
           and mean.dtype == input.dtype, "pln::gated_norm_backward: expected the forward's statistics, one per group")
    like = torch.empty_like(input, memory_format=torch.contiguous_format)
    return like, torch.empty_like(like), input.new_empty(s.num_features), input.new_empty(s.num_features)


def _gated_norm_autocast(input, gate, weight, bias, num_features, num_per_group, eps=1e-5, centering=False,
                         gate_position="before", activation="silu"):
    """Tensors of mixed dtypes (a Linear's bfloat16 gate beside a scan's float32
    input, float32 parameters) are computed in float32 (or float64, where one
    is) and the output takes the input's dtype, as the models' classes do."""
    args = (num_features, num_per_group, eps, centering, gate_position, activation)
    with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEYS):
        dtype = input.dtype
        params = [p for p in (weight, bias) if p is not None]
        if gate.dtype == dtype and all(p.dtype == dtype for p in params):
            return torch.ops.pln.gated_norm(input, gate, weight, bias, *args)
        common = torch.promote_types(dtype, gate.dtype)
        for p in params:
            if p.is_floating_point():
                common = torch.promote_types(common, p.dtype)
        if not common.is_floating_point or common in (torch.float16, torch.bfloat16):
            common = torch.float32

        def as_common(t):
            return None if t is None else t.to(common)

        return torch.ops.pln.gated_norm(input.to(common), gate.to(common), as_common(weight), as_common(bias),
                                        *args).to(dtype)


# ---------------------------------------------------------------- register ---

_LIBRARY = None


def register() -> None:
    """Registers every kernel above on the schemas the stable library declared (once)."""
    global _LIBRARY
    if _LIBRARY is not None:
        return
    lib = torch.library.Library("pln", "IMPL")
    kernels = {
        "parallel_ln": {"CompositeExplicitAutograd": _parallel_ln_elsewhere,
                        "Autograd": _parallel_ln_autograd, "AutocastCPU": _parallel_ln_autocast,
                        "AutocastCUDA": _parallel_ln_autocast},
        "pq_norm": {"CompositeExplicitAutograd": _pq_norm, "Autograd": _pq_norm_autograd,
                    "AutocastCPU": _pq_norm_autocast, "AutocastCUDA": _pq_norm_autocast},
        "parallel_ln_forward": {"Autograd": _parallel_ln_forward_autograd},
        "parallel_ln_backward": {"Autograd": _parallel_ln_backward_autograd},
        "parallel_ln_composite": {"CompositeImplicitAutograd": _parallel_ln_composite},
        "gated_norm": {"CompositeExplicitAutograd": _gated_norm_composite, "Autograd": _gated_norm_autograd,
                       "AutocastCPU": _gated_norm_autocast, "AutocastCUDA": _gated_norm_autocast},
        "gated_norm_forward": {"Autograd": _gated_norm_forward_autograd},
        "gated_norm_backward": {"Autograd": _gated_norm_backward_autograd},
        "gated_norm_composite": {"CompositeImplicitAutograd": _gated_norm_composite},
    }
    for op, by_key in kernels.items():
        for key, fn in by_key.items():
            lib.impl(op, fn, key)
    fakes = {"parallel_ln": _fake_parallel_ln, "pq_norm": _fake_pq_norm,
             "parallel_ln_forward": _fake_parallel_ln_forward, "parallel_ln_backward": _fake_parallel_ln_backward,
             "gated_norm": _fake_gated_norm, "gated_norm_forward": _fake_gated_norm_forward,
             "gated_norm_backward": _fake_gated_norm_backward}
    for op, fn in fakes.items():
        torch.library.register_fake(f"pln::{op}", fn, lib=lib)
    _LIBRARY = lib
