"""Sharding rules for the pln operators under ``torch.distributed.tensor``.

``import pln`` registers them where ``torch.distributed.tensor`` exists
(torch >= 2.6; :func:`register` does it again, explicitly, and says whether it
could). They tell DTensor how ``torch.ops.pln.parallel_ln``, ``pq_norm``,
``gated_norm`` and their ``_forward`` / ``_backward`` ops run on sharded
inputs (a gated norm's gate placed as its input):

* **features sharded** (``Shard(-1)`` / the feature axis of a features-last
  layout, ``Shard(1)`` of NCHW and NCL) with ``weight`` and ``bias``
  ``Shard(0)``: every rank normalises its own groups, and the output (and the
  saved statistics, and the gradients) stay sharded the same way. No
  collective at all. Offered only when each shard holds whole groups:
  ``C % ranks == 0`` and ``(C // ranks) % num_per_group == 0``.
* **positions sharded** (rows, tokens, batch, sequence, spatial: any other
  axis) with ``weight`` and ``bias`` replicated: the output is sharded the same
  way; ``grad_weight`` and ``grad_bias`` come back ``Partial`` (each rank's
  sum over its positions), summed by DTensor where a replicated value is
  needed (the optimiser step).
* **anything else** (a group straddling two shards, uneven shards, weights
  sharded on their own): everything replicated. DTensor then gathers the input
  first; the answer is right, and it costs that all-gather.

:class:`FeatureSharded` is the ``parallelize_module`` plan entry for a pln
module whose input arrives with its features sharded (after
``ColwiseParallel(use_local_output=False)``): it shards ``weight`` and
``bias`` with them, and refuses a mesh that would split a group.

DTensor picks the cheapest of these for the inputs it is given. The
operators run on local shards because ``pln.functional`` (and so the
modules) passes ``num_features = pln.functional.LOCAL_WIDTH`` when the input
is a DTensor: each rank's kernel then takes the feature count from its shard.
"""
from typing import List, Optional, Sequence, Tuple

import torch

from .functional import FIXED_LAYOUTS

__all__ = ["register", "registered", "local_groups", "FEATURE_AXIS", "FeatureSharded"]

#: The feature axis of each of the operators' layouts.
FEATURE_AXIS = {layout: axis for layout, (_, axis) in FIXED_LAYOUTS.items()}

_registered = False


def registered() -> bool:
    """Whether the sharding rules are registered with DTensor."""
    return _registered


def local_groups(num_features: int, num_per_group: int, ranks: int) -> bool:
    """Whether sharding ``num_features`` features over ``ranks`` ranks leaves
    every group of ``num_per_group`` whole on one rank (no collective)."""
    return num_features % ranks == 0 and (num_features // ranks) % num_per_group == 0


def _available() -> bool:
    if not torch.distributed.is_available():
        return False
    try:
        from torch.distributed.tensor.experimental import register_sharding  # noqa: F401
    except ImportError:
        return False
    return True


def register() -> bool:
    """Registers the sharding rules with DTensor (idempotent). Returns whether
    they are registered: False where torch has no ``torch.distributed.tensor``
    with ``register_sharding`` (torch < 2.6, or built without distributed)."""
    global _registered
    if _registered:
        return True
    if not _available():
        return False
    _register_rules()
    _registered = True
    return True


def _register_rules() -> None:
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor.experimental import register_sharding

    ops = torch.ops.pln

    def ranks_of(spec) -> int:
        return spec.mesh.size()

    def feature_sharding_ok(x, weight, bias, num_per_group: int, axis: int) -> bool:
        """Whether the features can be sharded with whole groups per rank."""
        C = int(x.shape[axis])
        if not local_groups(C, num_per_group, ranks_of(x)):
            return False
        return all(p is None or len(p.shape) == 1 for p in (weight, bias))

    def opt(spec, placement):
        return None if spec is None else placement

    def rules(x, weight, bias, num_per_group: int, axis: int, outputs: list,
              inputs: list) -> List[Tuple[list, list]]:
        """The placements an op accepts: its outputs' and its inputs' for each.
        Each tensor is "x" (placed as the input is: the input, the gate, the
        saved statistics, the input's and gate's gradients), "grad" (a weight's
        or bias's gradient: partial sums when rows are sharded), or a weight or
        bias itself, given as ("param", tensor or None); None is a non-tensor
        argument. The input replicated, sharded along a row axis, or along its
        features in whole groups a rank (with the parameters and their
        gradients), so that no rule needs a collective."""
        def rule(x_placement, param_placement, grad_placement):
            def place(kind):
                if kind == "x":
                    return x_placement
                if kind == "grad":
                    return grad_placement
                return None if kind is None else opt(kind[1], param_placement)
            return [place(o) for o in outputs], [place(a) for a in inputs]

        found = [rule(Replicate(), Replicate(), Replicate())]
        for d in range(len(x.shape)):
            if d != axis:
                found.append(rule(Shard(d), Replicate(), Partial()))
        if feature_sharding_ok(x, weight, bias, num_per_group, axis):
            found.append(rule(Shard(axis), Shard(0), Shard(0)))
        return found

    def params(weight, bias):
        return [("param", weight), ("param", bias)]

    @register_sharding(ops.parallel_ln.default)
    def _parallel_ln(input, weight, bias, num_features, num_per_group, eps=1e-5, centering=True,
                     layout="nchw", p=2.0):
        return rules(input, weight, bias, num_per_group, FEATURE_AXIS[layout], ["x"],
                     ["x"] + params(weight, bias) + [None] * 6)

    @register_sharding(ops.pq_norm.default)
    def _pq_norm(input, weight, bias, num_features, num_per_group, p=2.0, q=2.0, eps=1e-5,
                 centering=True, layout="nchw"):
        return rules(input, weight, bias, num_per_group, FEATURE_AXIS[layout], ["x"],
                     ["x"] + params(weight, bias) + [None] * 7)

    @register_sharding(ops.parallel_ln_forward.default)
    def _parallel_ln_forward(input, weight, bias, num_features, num_per_group, eps=1e-5,
                             centering=True, layout="nchw"):
        return rules(input, weight, bias, num_per_group, FEATURE_AXIS[layout], ["x"] * 3,
                     ["x"] + params(weight, bias) + [None] * 5)

    @register_sharding(ops.parallel_ln_backward.default)
    def _parallel_ln_backward(grad_output, input, mean, rstd, weight, num_features, num_per_group,
                              eps=1e-5, centering=True, layout="nchw"):
        return rules(input, weight, None, num_per_group, FEATURE_AXIS[layout], ["x", "grad", "grad"],
                     ["x"] * 4 + [("param", weight)] + [None] * 5)

    # The gated norm (features last): the gate, the saved statistics ([..., C / g])
    # and the gradients of input and gate are placed as the input is.
    @register_sharding(ops.gated_norm.default)
    def _gated_norm(input, gate, weight, bias, num_features, num_per_group, eps=1e-5, centering=False,
                    gate_position="before", activation="silu"):
        return rules(input, weight, bias, num_per_group, len(input.shape) - 1, ["x"],
                     ["x"] * 2 + params(weight, bias) + [None] * 6)

    @register_sharding(ops.gated_norm_forward.default)
    def _gated_norm_forward(input, gate, weight, bias, num_features, num_per_group, eps=1e-5, centering=False,
                            gate_position="before", activation="silu"):
        return rules(input, weight, bias, num_per_group, len(input.shape) - 1, ["x"] * 3,
                     ["x"] * 2 + params(weight, bias) + [None] * 6)

    @register_sharding(ops.gated_norm_backward.default)
    def _gated_norm_backward(grad_output, input, gate, mean, rstd, weight, bias, num_features, num_per_group,
                             eps=1e-5, centering=False, gate_position="before", activation="silu"):
        return rules(input, weight, bias, num_per_group, len(input.shape) - 1, ["x"] * 2 + ["grad"] * 2,
                     ["x"] * 5 + params(weight, bias) + [None] * 6)


_feature_sharded = None


def __getattr__(name: str):
    if name == "FeatureSharded":  # a ParallelStyle: defined where torch.distributed.tensor is
        global _feature_sharded
        if _feature_sharded is None:
            _feature_sharded = _make_feature_sharded()
        return _feature_sharded
    raise AttributeError(f"module 'pln.distributed' has no attribute '{name}'")


def _make_feature_sharded():
    if not _available():
        raise ImportError("pln.distributed.FeatureSharded needs torch.distributed.tensor (torch >= 2.6 "
                          f"built with distributed); this is torch {torch.__version__}")
    from torch import nn
    from torch.distributed.tensor import DTensor, Shard, distribute_module, distribute_tensor
    from torch.distributed.tensor.parallel import ParallelStyle

    class FeatureSharded(ParallelStyle):
        """``parallelize_module`` plan entry for :class:`pln.ParallelLN`,
        :class:`pln.PLS`, :class:`pln.PQNorm` or :class:`pln.GatedNorm` between
        a ``ColwiseParallel`` and a ``RowwiseParallel`` linear layer: ``weight``
        and ``bias`` become ``Shard(0)`` DTensors, an input (and a gate) that is
        a plain tensor is taken as this rank's shard of the features, and the output stays a DTensor sharded
        on the features, so the norm runs with no collective.

        Raises ``ValueError`` naming the widths when the mesh would leave a
        rank without whole groups (``(C / ranks) % num_per_group != 0``): use
        a replicated norm (no plan entry, inputs replicated) there instead.
        """

        def __init__(self, *, use_local_output: bool = False):
            super().__init__()
            self.use_local_output = use_local_output

        def _apply(self, module, device_mesh):
            C, g = int(module.num_features), int(module.num_per_group)
            ranks = device_mesh.size()
            if not local_groups(C, g, ranks):
                raise ValueError(
                    f"pln: FeatureSharded: {C} features over {ranks} ranks leave {C / ranks:g} per rank, "
                    f"not a whole number of groups of num_per_group = {g}; each rank needs a multiple of "
                    f"{g} features (C divisible by {ranks * g})")
            axis = -1 if module._functional_layout == "features_last" else 1
            register()

            def partition(name, mod, mesh):
                for pname, p in list(mod.named_parameters(recurse=False)):
                    mod.register_parameter(pname, nn.Parameter(distribute_tensor(p.data, mesh, [Shard(0)])))

            def input_fn(mod, inputs, mesh):
                # The input, and a gated norm's gate: each rank's shard of the features.
                return tuple(DTensor.from_local(t, mesh, [Shard(axis % t.dim())], run_check=False)
                             if isinstance(t, torch.Tensor) and not isinstance(t, DTensor) else t
                             for t in inputs)

            def output_fn(mod, output, mesh):
                return output.to_local() if self.use_local_output else output

            return distribute_module(module, device_mesh, partition, input_fn, output_fn)

    return FeatureSharded
