"""Shared by the Python benchmark scripts."""

import ctypes


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
