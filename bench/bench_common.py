"""Shared by the Python benchmark scripts."""

import argparse
import csv
import ctypes
import json
import os
import subprocess
import sys
import tempfile
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


def interleaved_times_ms(fns, rounds, budget_ms=0.0):
    """Each function's time per call (ms) in every round, calling them in turn
    round after round so that drifting machine load hits every side alike:
    `rounds` rounds, more (up to 5x as many) while less than `budget_ms` has
    been spent. Two calls of each first warm up (and compile)."""
    import time

    for fn in fns.values():
        fn()
        fn()
    times = {name: [] for name in fns}
    spent, done = 0.0, 0
    while done < rounds or (spent < budget_ms and done < 5 * rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            ms = (time.perf_counter() - start) * 1e3
            times[name].append(ms)
            spent += ms
        done += 1
    return times


def interleaved_min_ms(fns, rounds, budget_ms=0.0):
    """The best of each function's interleaved times (interleaved_times_ms)."""
    return {name: min(t) for name, t in interleaved_times_ms(fns, rounds, budget_ms).items()}


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
    both sides' threads (OpenBLAS's too) and OpenMP's wait, and the number of
    runs per side."""
    if not Path(args.pln).exists():
        sys.exit(f"{name}: {args.pln} not found; build it with `make` or pass --pln")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    if "OMP_WAIT_POLICY" not in env and "GOMP_SPINCOUNT" not in env:
        # What `pln` starts itself with on more than one thread (experiments/system/start_up.h).
        env["GOMP_SPINCOUNT"] = "30000"
    wait = next(f"{k}={env[k]}" for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT") if k in env)
    print(f"{name}: both sides run with {blas_kernels(env)} and {wait}")
    return env, 1 if args.quick else args.repeats


def blas_kernels(env):
    """Which OpenBLAS kernels the matrix products use: an OPENBLAS_CORETYPE in
    the environment overrides OpenBLAS's own choice for the CPU (and can halve
    their speed on a CPU with AVX-512)."""
    core = env.get("OPENBLAS_CORETYPE")
    return f"OPENBLAS_CORETYPE={core}" if core else "OpenBLAS's own choice of kernels for this CPU"


def pln_summary_value(command, metric, env):
    """Runs a `pln` run command (without --out) into a temporary directory and
    returns `metric` from its summary.json."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([*map(str, command), "--out", out], check=True, env=env, stdout=subprocess.DEVNULL)
        return json.loads((Path(out) / "summary.json").read_text())[metric]


def pln_last_epoch_rate(command, images, env):
    """Runs a `pln` image run command (without --out, two epochs or more) into a
    temporary directory and returns the images per second of its last epoch,
    from epochs.csv's cumulative training seconds: the same measure as
    images_per_second on the Python side, with the first epoch as warm-up."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([*map(str, command), "--out", out], check=True, env=env, stdout=subprocess.DEVNULL)
        with open(Path(out) / "epochs.csv", newline="") as f:
            seconds = [float(row["seconds"]) for row in csv.DictReader(f)]
    if len(seconds) < 2:
        sys.exit(f"{command[1]} ran {len(seconds)} epoch(s); the benchmark needs two")
    return images / (seconds[-1] - seconds[-2])


def python_prelude(threads):
    """The start of every Python side's script: the original module and these
    helpers importable, freed memory kept, `threads` threads, seed 0."""
    return f"""import sys, math, time, torch
import torch.nn as nn
sys.path.insert(0, {str(ROOT / 'python' / 'tests')!r})
sys.path.insert(0, {str(ROOT / 'bench')!r})
from original import OriginalParallelLN
from bench_common import images_per_second, keep_freed_memory
keep_freed_memory()
torch.set_num_threads({threads})
torch.manual_seed(0)
"""


def python_rate(code, env):
    """Runs `code` in a fresh interpreter (one process per side keeps the
    comparison honest) and returns the number it prints last."""
    out = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def images_per_second(step, images, batch=128):
    """Images per second of the second of two epochs of `step(indices)` over
    shuffled batches; the first epoch warms up."""
    import time

    import torch

    def epoch():
        order = torch.randperm(images)
        for i in range(0, images, batch):
            step(order[i:i + batch])

    epoch()
    start = time.perf_counter()
    epoch()
    return images / (time.perf_counter() - start)
