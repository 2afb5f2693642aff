"""Shared by the Python benchmark scripts."""

import argparse
import ctypes
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def keep_freed_memory():
    """Keeps freed blocks in the heap (glibc mallopt), as the C++ programs do, so
    page faults of fresh allocations do not swamp the arithmetic being timed."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
        return "glibc malloc, no mmap/trim of freed blocks"
    except (OSError, AttributeError):
        return "system allocator"


def best_alternating(run_cpp, run_python, repeats):
    """Runs the two sides in turn `repeats` times, so drifting machine load hits
    both, and returns the best rate of each."""
    cpp = py = 0.0
    for _ in range(repeats):
        cpp = max(cpp, run_cpp())
        py = max(py, run_python())
    return cpp, py


def side_by_side_parser(doc, quick_help):
    """The options every side-by-side script takes; add the script's own to it."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--pln", default=str(ROOT / "build" / "apps" / "pln"), help="the pln program")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs per side; the best counts")
    parser.add_argument("--quick", action="store_true", help=quick_help)
    return parser


def side_by_side_setup(args, name):
    """Stops when the pln program is missing; returns the environment that pins
    both sides' threads (OpenBLAS's too) and the number of runs per side."""
    if not Path(args.pln).exists():
        sys.exit(f"{name}: {args.pln} not found; build it with `make` or pass --pln")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    return env, 1 if args.quick else args.repeats
