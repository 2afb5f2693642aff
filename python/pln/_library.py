"""Finds and loads the shared library that registers torch.ops.pln."""

import os
from pathlib import Path

import torch

LIBRARY_NAME = "libpln_ops.so"
_PACKAGE_DIR = Path(__file__).resolve().parent


def _candidates():
    env = os.environ.get("PLN_LIBRARY")
    if env:
        # An explicit choice is the only candidate: a wrong path is an error, not a fallback.
        return [("PLN_LIBRARY", Path(env))]
    return [
        ("installed beside the package", _PACKAGE_DIR / LIBRARY_NAME),
        ("default build directory", _PACKAGE_DIR.parents[1] / "build" / LIBRARY_NAME),
    ]


def load():
    """Loads the operator library once; raises ImportError saying how to build it."""
    if hasattr(torch.ops.pln, "parallel_ln"):
        return
    tried = []
    for origin, path in _candidates():
        if path.is_file():
            torch.ops.load_library(str(path))
            return
        tried.append(f"{path} ({origin})")
    raise ImportError(
        "pln: cannot find the operator library " + LIBRARY_NAME + "; looked for "
        + ", ".join(tried)
        + ". Build it with `make` at the repository root (it lands in build/), "
        "or point PLN_LIBRARY at an existing " + LIBRARY_NAME + "."
    )
