"""PyTorch front end of the pln C++ library: fused Parallel Layer Normalization.

    import pln
    norm = pln.ParallelLN(64, 8)          # same arguments as the original module
    y = norm(x)                           # runs torch.ops.pln.parallel_ln

Importing pln registers the operators torch.ops.pln.parallel_ln and
torch.ops.pln.pq_norm (and the forward and backward ops autograd runs), with
CPU kernels, Meta kernels for torch.compile and torch.export, and autograd.
"""

from . import _library

_library.load()

from .modules import PLS, ParallelLN, PQNorm  # noqa: E402

#: Path of the shared library the operators were loaded from.
library_path = _library.loaded_from

__all__ = ["ParallelLN", "PLS", "PQNorm", "library_path"]
