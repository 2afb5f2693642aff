"""ONNX export of the pln operators as standard ONNX operators.

    import pln.onnx
    program = pln.onnx.export(model, (x,), dynamic_shapes=...)   # torch.onnx.export(..., dynamo=True)
    program.save("model.onnx")

or, with torch.onnx.export itself:

    torch.onnx.export(model, (x,), dynamo=True,
                      custom_translation_table=pln.onnx.translation_table())

Every node of the result is in the default ONNX domain (opset 18), so any
ONNX runtime runs it without pln:

- features-last PLN (p = 2): Reshape + LayerNormalization + Reshape, then the
  per-feature Mul and Add;
- features-first PLN (NCHW, NCL), PLS, p != 2 and PQNorm: their formulas as
  Reshape, ReduceMean, Sub, Mul/Abs/Pow, Add, Sqrt or Pow, Div.

The translations are registered through torch.onnx.export's public
``custom_translation_table`` argument; they serve code that calls
torch.ops.pln.* itself (the modules and pln.functional, inside an export,
write their formulas as ATen operations, which torch.onnx.export translates
with nothing but ``import pln``). Needs onnx and onnxscript (and onnxruntime
to run the result).
"""

from typing import Any, Callable, Dict, Optional, Sequence

import torch

try:
    import onnxscript
    from onnxscript import opset18 as op
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("pln.onnx needs onnxscript (and onnx): pip install onnx onnxscript") from error

__all__ = ["translation_table", "export", "OPSET"]

#: The ONNX opset of the translations (LayerNormalization needs 17 or later).
OPSET = 18

from .functional import FIXED_LAYOUTS as _LAYOUTS  # noqa: E402


def _geometry(layout: str):
    if layout not in _LAYOUTS:
        raise ValueError(f"pln.onnx: unknown layout '{layout}'; expected one of {', '.join(_LAYOUTS)}")
    return _LAYOUTS[layout]


def _scalar(value: float, like):
    return op.CastLike(op.Constant(value_float=float(value)), like)


def _affine(y, weight, bias, layout: str):
    rank, axis = _geometry(layout)
    trailing = rank - 1 - axis
    if weight is not None:
        w = weight if trailing == 0 else op.Reshape(weight, op.Constant(value_ints=[-1] + [1] * trailing))
        y = op.Mul(y, w)
    if bias is not None:
        b = bias if trailing == 0 else op.Reshape(bias, op.Constant(value_ints=[-1] + [1] * trailing))
        y = op.Add(y, b)
    return y


def _normalise(x, num_features: int, num_per_group: int, eps: float, centering: bool, layout: str,
               p: float, q: Optional[float]):
    rank, axis = _geometry(layout)
    groups = num_features // num_per_group
    shape = op.Shape(x)
    if axis == rank - 1 and centering and p == 2 and (q is None or q == 2):
        # Features last: one LayerNormalization over the last axis of [..., G, g].
        grouped = op.Reshape(x, op.Constant(value_ints=[0] * (rank - 1) + [groups, num_per_group]))
        ones = op.CastLike(op.Constant(value_floats=[1.0] * num_per_group), x)
        y = op.LayerNormalization(grouped, ones, axis=-1, epsilon=float(eps))
        if isinstance(y, (tuple, list)):  # (Y, Mean, InvStdDev): only Y is used
            y = y[0]
        return op.Reshape(y, shape)
    # [.., G, g, rest]: the group's features on axis `axis + 1`, every position kept apart.
    grouped = op.Reshape(x, op.Constant(value_ints=[0] * axis + [groups, num_per_group, -1]))
    axes = op.Constant(value_ints=[axis + 1])
    xc = op.Sub(grouped, op.ReduceMean(grouped, axes, keepdims=1)) if centering else grouped
    if p == 2:
        stat = op.ReduceMean(op.Mul(xc, xc), axes, keepdims=1)
    else:
        stat = op.ReduceMean(op.Pow(op.Abs(xc), _scalar(p, x)), axes, keepdims=1)
    shifted = op.Add(stat, _scalar(eps, x))
    root = q if q is not None else p
    denominator = op.Sqrt(shifted) if root == 2 else op.Pow(shifted, _scalar(1.0 / root, x))
    numerator = xc
    if q is not None and p != q:
        numerator = op.Mul(op.Sign(xc), op.Pow(op.Abs(xc), _scalar(p / q, x)))
    return op.Reshape(op.Div(numerator, denominator), shape)


def parallel_ln(input, weight, bias, num_features: int, num_per_group: int, eps: float = 1e-5,
                centering: bool = True, layout: str = "nchw", p: float = 2.0):
    """Translation of ``pln::parallel_ln``."""
    y = _normalise(input, num_features, num_per_group, eps, centering, layout, p, None)
    return _affine(y, weight, bias, layout)


def pq_norm(input, weight, bias, num_features: int, num_per_group: int, p: float = 2.0,
            q: float = 2.0, eps: float = 1e-5, centering: bool = True, layout: str = "nchw"):
    """Translation of ``pln::pq_norm``."""
    y = _normalise(input, num_features, num_per_group, eps, centering, layout, p, q)
    return _affine(y, weight, bias, layout)


def _untranslatable(name: str) -> Callable[..., Any]:
    def refuse(*args, **kwargs):
        raise NotImplementedError(
            f"pln.onnx: torch.ops.pln.{name} has no ONNX translation: it is one half of the "
            f"training graph (forward with saved statistics, or backward). Export the model in eval "
            f"mode, where it calls torch.ops.pln.parallel_ln or pq_norm")
    refuse.__name__ = f"pln_{name}_untranslatable"
    return refuse


def translation_table() -> Dict[Any, Callable[..., Any]]:
    """The ``custom_translation_table`` for ``torch.onnx.export(..., dynamo=True)``:
    each pln operator to its translation into standard ONNX operators."""
    return {
        torch.ops.pln.parallel_ln.default: parallel_ln,
        torch.ops.pln.pq_norm.default: pq_norm,
        torch.ops.pln.parallel_ln_forward.default: _untranslatable("parallel_ln_forward"),
        torch.ops.pln.parallel_ln_backward.default: _untranslatable("parallel_ln_backward"),
    }


def export(model: Any, args: Sequence[Any], f: Any = None, **kwargs: Any):
    """``torch.onnx.export(model, args, f, dynamo=True, **kwargs)`` with the pln
    translations added to any ``custom_translation_table`` given. Returns the
    ``torch.onnx.ONNXProgram``."""
    if kwargs.pop("dynamo", True) is not True:
        raise ValueError("pln.onnx.export: the pln translations need the dynamo exporter (dynamo=True)")
    opset = kwargs.get("opset_version")
    if opset is not None and opset < 17:
        raise ValueError(f"pln.onnx.export: opset_version={opset} has no LayerNormalization; "
                         f"pln's translations need opset 17 or later ({OPSET} is used)")
    table = dict(kwargs.pop("custom_translation_table", None) or {})
    table.update(translation_table())
    return torch.onnx.export(model, tuple(args), f, dynamo=True, custom_translation_table=table,
                             **kwargs)
