"""Side-by-side timings from Python, on the three shapes of the C++ benchmark,
forward and forward+backward, min of N calls taken in interleaved rounds.

The operator alone:
  pln           the pln package's fused op (torch.ops.pln.parallel_ln), eager
  original      the original module's composed PyTorch ops, eager
  orig.compile  the original module under torch.compile (Inductor fuses it; PyTorch 2.x)
  copy          x.clone(): the memory-bound floor
In a model (PyTorch 2.x): four residual norm layers, x = x + norm_k(x):
  model.pln     with pln.ParallelLN, eager
  model.pcomp   the same model under torch.compile (the fused op called from the graph)
  model.ocomp   with the original module, under torch.compile

    PLN_LIBRARY=build/libpln.so PYTHONPATH=python /usr/bin/python3 bench/bench_python.py
    .venv/bin/python bench/bench_python.py --threads 1,2       # PyTorch 2.x, the installed package
"""

import argparse
import sys
from pathlib import Path

import torch

from bench_common import interleaved_min_ms, keep_freed_memory

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
HAS_COMPILE = hasattr(torch, "compile")


class Residual(torch.nn.Module):
    """x = x + norm_k(x) for each of the norms: a model whose compiled graph
    calls the norm several times between Inductor's own kernels."""

    def __init__(self, norms):
        super().__init__()
        self.norms = torch.nn.ModuleList(norms)

    def forward(self, x):
        for norm in self.norms:
            x = x + norm(x)
        return x


def randomised(module, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        module.weight.copy_(torch.rand(module.weight.shape, generator=gen) + 0.5)
        module.bias.copy_(torch.randn(module.bias.shape, generator=gen))
    return module


def share_parameters(original, ours):
    """The original module with our values: its parameters are broadcast-shaped
    ([1, C, 1, 1], [1, 1, C], [1, C]), ours [C]."""
    with torch.no_grad():
        for name, param in original.named_parameters():
            param.copy_(getattr(ours, name).reshape(param.shape))
    return original


def sides(c, g, dim):
    """The modules timed against each other; the original's share our parameters."""
    ours = randomised(pln.ParallelLN(c, g, dim=dim), 0)
    ref = share_parameters(OriginalParallelLN(c, g, dim=dim), ours)
    modules = {"pln": ours, "original": ref}
    if HAS_COMPILE:
        modules["orig.compile"] = torch.compile(ref)
        layers = [randomised(pln.ParallelLN(c, g, dim=dim), k) for k in range(4)]
        originals = [share_parameters(OriginalParallelLN(c, g, dim=dim), l) for l in layers]
        modules["model.pln"] = Residual(layers)
        modules["model.pcomp"] = torch.compile(modules["model.pln"])
        modules["model.ocomp"] = torch.compile(Residual(originals))
    return modules


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1", help="thread counts, comma-separated")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    allocator = keep_freed_memory()
    shapes, reps = (QUICK, min(args.reps, 3)) if args.quick else (SHAPES, args.reps)
    names = ["pln", "original"] + (["orig.compile"] if HAS_COMPILE else []) + ["copy"]
    if HAS_COMPILE:
        names += ["model.pln", "model.pcomp", "model.ocomp"]
    print(f"bench_python: torch {torch.__version__}, min of >= {reps} interleaved runs, float32, affine, "
          f"{allocator}")
    print("ratios: orig/pln and ocomp/pln are speed-ups of the eager fused op over the original module, "
          "eager and compiled; pln/copy its cost over a plain copy; in the model, pcomp/pln is the "
          "compiled model's time over eager and ocomp/pcomp the speed-up over the compiled original")
    ratios = ["orig/pln"] + (["ocomp/pln"] if HAS_COMPILE else []) + ["pln/copy"]
    if HAS_COMPILE:
        ratios += ["pcomp/pln", "ocomp/pcomp"]
    print(f"{'shape':<28} {'thr':>3} {'pass':>8} |" + "".join(f" {n:>12}" for n in names) + " |"
          + "".join(f" {r:>11}" for r in ratios))
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        for label, shape, c, g, dim in shapes:
            if HAS_COMPILE:
                # Fresh compiles: Inductor's kernels are generated for the thread count in force,
                # and every shape's modules would otherwise count against one recompile limit.
                torch._dynamo.reset()
            torch.manual_seed(0)
            x, dy = torch.randn(shape), torch.randn(shape)
            modules = sides(c, g, dim)
            for backward in (False, True):
                def run(module):
                    if not backward:
                        with torch.no_grad():
                            module(x)
                        return
                    xg = x.detach().requires_grad_()
                    module(xg).backward(dy)

                fns = {name: (lambda m=m: run(m)) for name, m in modules.items()}
                fns["copy"] = x.clone
                t = interleaved_min_ms(fns, reps, 50 if args.quick else 1500)
                row = [t["original"] / t["pln"]]
                if HAS_COMPILE:
                    row.append(t["orig.compile"] / t["pln"])
                row.append(t["pln"] / t["copy"])
                if HAS_COMPILE:
                    row += [t["model.pcomp"] / t["model.pln"], t["model.ocomp"] / t["model.pcomp"]]
                print(f"{label:<28} {threads:>3} {'fwd+bwd' if backward else 'fwd':>8} |"
                      + "".join(f" {t[n]:>12.3f}" for n in names) + " |"
                      + "".join(f" {r:>11.2f}" for r in row), flush=True)


if __name__ == "__main__":
    main()
