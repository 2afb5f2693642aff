"""Side-by-side timings from Python: the pln package (torch.ops.pln over the
fused kernels) against the original module's composed PyTorch ops, on the
three shapes of the C++ benchmark, forward and forward+backward, min of N.

    PLN_LIBRARY=build/libpln_ops.so PYTHONPATH=python /usr/bin/python3 bench/bench_python.py [--threads 1] [--quick]
"""

import argparse
import sys
import time
from pathlib import Path

import torch

from bench_common import keep_freed_memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
import pln  # noqa: E402
from original import OriginalParallelLN  # noqa: E402

SHAPES = [
    ("MLP    [4096,512] g=8", (4096, 512), 512, 8, 2),
    ("tokens [128,65,384] g=8", (128, 65, 384), 384, 8, 3),
    ("NCHW   [128,64,32,32] g=16", (128, 64, 32, 32), 64, 16, 4),
]
QUICK = [
    ("MLP    [512,512] g=8", (512, 512), 512, 8, 2),
    ("tokens [16,65,384] g=8", (16, 65, 384), 384, 8, 3),
    ("NCHW   [8,64,32,32] g=16", (8, 64, 32, 32), 64, 16, 4),
]


def min_ms(fn, reps, budget_ms):
    fn()
    best, spent, r = float("inf"), 0.0, 0
    while r < reps or (spent < budget_ms and r < 5 * reps):
        t0 = time.perf_counter()
        fn()
        ms = (time.perf_counter() - t0) * 1e3
        best, spent, r = min(best, ms), spent + ms, r + 1
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    allocator = keep_freed_memory()
    torch.set_num_threads(args.threads)
    shapes, reps = (QUICK, min(args.reps, 3)) if args.quick else (SHAPES, args.reps)
    print(f"bench_python: torch {torch.__version__}, {args.threads} thread(s), min of >= {reps} runs, "
          f"float32, affine, {allocator}")
    print(f"{'shape':<28} {'pass':>8} | {'pln ms':>9} {'original':>9} | {'speed-up':>8}")
    for name, shape, c, g, dim in shapes:
        torch.manual_seed(0)
        x, dy = torch.randn(shape), torch.randn(shape)
        ours, ref = pln.ParallelLN(c, g, dim=dim), OriginalParallelLN(c, g, dim=dim)
        for module in (ours, ref):
            with torch.no_grad():
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_()
        for backward in (False, True):
            def run(module):
                if not backward:
                    with torch.no_grad():
                        module(x)
                    return
                xg = x.detach().requires_grad_()
                module(xg).backward(dy)
            budget = 50 if args.quick else 600
            t_ours = min_ms(lambda: run(ours), reps, budget)
            t_ref = min_ms(lambda: run(ref), reps, budget)
            print(f"{name:<28} {'fwd+bwd' if backward else 'fwd':>8} | {t_ours:>9.3f} {t_ref:>9.3f} | "
                  f"{t_ref / t_ours:>8.1f}")


if __name__ == "__main__":
    main()
