"""PyTorch front end of the pln C++ library: fused Parallel Layer Normalization.

    import pln
    norm = pln.ParallelLN(64, 8)          # same arguments as the original module
    y = norm(x)                           # runs torch.ops.pln.parallel_ln
"""

from . import _library

_library.load()

from .modules import PLS, ParallelLN, PQNorm  # noqa: E402

__all__ = ["ParallelLN", "PLS", "PQNorm"]
