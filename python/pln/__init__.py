"""PyTorch front end of the pln C++ library: fused Parallel Layer Normalization.

    import pln
    norm = pln.ParallelLN(64, 8)               # same arguments as the original module
    y = norm(x)                                # runs torch.ops.pln.parallel_ln
    y = pln.functional.parallel_ln(x, 8)       # features last, groups of 8
    changes = pln.convert(model, num_per_group=8)   # LayerNorm -> ParallelLN, RMSNorm -> PLS; .skipped

Importing pln registers the operators torch.ops.pln.parallel_ln and
torch.ops.pln.pq_norm (and the forward and backward ops autograd runs), with
CPU kernels, Meta kernels for torch.compile and torch.export, and autograd.
``pln.onnx`` (imported on first use) translates them into standard ONNX
operators for ``torch.onnx.export(..., dynamo=True)``. ``pln.distributed``
holds their DTensor sharding rules (tensor and sequence parallelism with no
collective where each rank holds whole groups): registered by ``import pln``
when ``torch.distributed.tensor`` is already imported, else on the first
DTensor a pln function or module sees, or by ``pln.distributed.register()``.
"""

from . import _library

_library.load()

from . import functional  # noqa: E402

functional._register_vmap_rules()
from .convert import Change, Conversion, ConversionError, Skipped, convert  # noqa: E402
from .modules import PLS, GatedNorm, ParallelLN, PerHeadNorm, PQNorm  # noqa: E402
from . import distributed  # noqa: E402

import sys as _sys  # noqa: E402

if "torch.distributed.tensor" in _sys.modules:  # else on first use: importing it costs time
    distributed.register()

#: The package's version (pyproject.toml's).
__version__ = "0.1.0"

#: Path of the shared library the operators were loaded from.
library_path = _library.loaded_from

__all__ = ["ParallelLN", "PLS", "PQNorm", "GatedNorm", "PerHeadNorm", "functional", "distributed", "convert", "Change", "Conversion", "Skipped",
           "ConversionError", "library_path", "cpu_kernels", "__version__"]


def cpu_kernels() -> str:
    """The CPU kernels the fused operators run in this process: ``"avx512"``,
    ``"avx2"`` or ``"base"`` (portable) on x86-64, ``"neon"`` or ``"base"`` on
    aarch64; the best this CPU and build have, or the one PLN_CPU_CAPABILITY
    names (an error if it names one they lack)."""
    import torch
    return torch.ops.pln.cpu_kernels()


def __getattr__(name: str):
    if name == "onnx":  # needs onnxscript: imported when first used
        import importlib
        return importlib.import_module(".onnx", __name__)
    raise AttributeError(f"module 'pln' has no attribute '{name}'")
