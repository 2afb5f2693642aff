"""pln's modules against torch.compile of the reference module and against
the reference eager, on the CPU, in one process: one thread and two
(torch.set_num_threads), forward and forward+backward, float32, bfloat16 and
float16, at the shapes of models:

  mlp   [8192, 512]       PLN g = 8      (features last)
  g64   [8, 1024, 768]    PLN g = 64
  ln    [8, 1024, 768]    PLN g = 768    (LayerNorm: one group)
  pls   [4, 1024, 4096]   PLS g = 4096   (Llama's RMSNorm)
  nchw  [8, 64, 56, 56]   PLN g = 16     (channels first)

and, asked for by --shapes only, one far out of any cache:

  mlp-large [131072, 512] PLN g = 8      (256 MiB in float32)

The reference module is what a user would otherwise run: for PLN the original
module's arithmetic (python/tests/original.py) with the grouped mean and
variance of a half-type input computed in float32 and the output rounded once
to the input's dtype; for PLS at g = C transformers' LlamaRMSNorm as written
(float32 statistic and scaling, rounded to the input's dtype before the weight
multiplies). `compiled` is torch.compile of it (Inductor), compiled afresh for
every cell; `eager` is the same module uncompiled.

Times are the median (--stat) of interleaved rounds, pln, compiled and eager
in turn, so that a loaded machine disturbs all three alike; a ratio is pln's
time over the other's (below 1: pln is faster). `copy` (forward only) copies
x into a fresh tensor of its dtype: the bytes a forward moves at least, so
that pln/copy says how far a cell is from the memory bound (a half type halves
the copy's time; where pln's does not follow, its arithmetic bounds it). The error of an output is
max |y - ref| / max |ref|, ref the reference's arithmetic in float64 on the
input and parameters widened from the dtype. The goals of the table (pln no
slower than compiled; half types at most 0.6x (forward) and 0.7x
(forward+backward) pln's own float32 time; error within twice the compiled
reference's plus one rounding of the dtype) are checked below it.

    .venv/bin/python bench/bench_compile.py --threads 1,2 --out bench/results/DATE-MACHINE-compile.md
    .venv/bin/python bench/bench_compile.py --shapes pls,nchw --dtypes bfloat16 --threads 1
    PLN_LIBRARY=build-torch2/libpln.so PYTHONPATH=python .venv/bin/python bench/bench_compile.py --quick
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import torch
import torch.nn as nn

from bench_common import ROOT, interleaved_times_ms, keep_freed_memory

sys.path.insert(0, str(ROOT / "python" / "tests"))
import pln  # noqa: E402
from original import OriginalParallelLN  # noqa: E402

# key, name, shape, shape under --quick, group size, module (pln.ParallelLN or pln.PLS), the original's dim
Case = namedtuple("Case", "key name shape quick_shape g kind dim")
CASES = [
    Case("mlp", "PLN g = 8", (8192, 512), (256, 512), 8, "pln", 2),
    Case("g64", "PLN g = 64", (8, 1024, 768), (2, 32, 768), 64, "pln", 3),
    Case("ln", "LN g = 768", (8, 1024, 768), (2, 32, 768), 768, "pln", 3),
    Case("pls", "PLS g = 4096 (Llama's RMSNorm)", (4, 1024, 4096), (1, 32, 4096), 4096, "pls", 3),
    Case("nchw", "NCHW PLN g = 16", (8, 64, 56, 56), (2, 64, 8, 8), 16, "pln", 4),
]
# Where the bytes and not the arithmetic bound the time: what the half types' goal assumes.
LARGE_CASES = [
    Case("mlp-large", "PLN g = 8", (131072, 512), (256, 512), 8, "pln", 2),
]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
PLS_EPS = 1e-6  # Llama's


class RoundedOnce(nn.Module):
    """The original module's arithmetic in `compute` (float32: the statistics
    of a half-type input in float32), its output rounded once to the input's
    dtype. Called on a float64 input it is the float64 reference."""

    def __init__(self, original, compute=torch.float32):
        super().__init__()
        self.original, self.compute = original, compute

    def forward(self, x):
        return self.original(x.to(torch.promote_types(x.dtype, self.compute))).to(x.dtype)


class LlamaRMSNorm(nn.Module):
    """transformers' LlamaRMSNorm, line for line (its weight given)."""

    def __init__(self, weight, eps):
        super().__init__()
        self.weight, self.variance_epsilon = weight, eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.promote_types(input_dtype, torch.float32))
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def modules(case, dtype):
    """pln's module and the reference, in `dtype`, with the same random parameters."""
    c = case.shape[1] if case.dim == 4 else case.shape[-1]
    gen = torch.Generator().manual_seed(0)
    if case.kind == "pls":
        ours = pln.PLS(c, case.g, eps=PLS_EPS, dim=case.dim, bias=False, dtype=dtype)
        with torch.no_grad():
            ours.weight.copy_(torch.rand(c, generator=gen) + 0.5)
        return ours, LlamaRMSNorm(nn.Parameter(ours.weight.detach().clone()), PLS_EPS)
    ours = pln.ParallelLN(c, case.g, dim=case.dim, dtype=dtype)
    original = OriginalParallelLN(c, case.g, dim=case.dim).to(dtype)
    with torch.no_grad():
        ours.weight.copy_(torch.rand(c, generator=gen) + 0.5)
        ours.bias.copy_(torch.randn(c, generator=gen))
        for name, param in original.named_parameters():
            param.copy_(getattr(ours, name).reshape(param.shape))
    return ours, RoundedOnce(original)


def relative_error(y, reference):
    return ((y.double() - reference).abs().max() / reference.abs().max()).item()


def passes(module, x, dy):
    """The forward (without autograd) and forward+backward calls of a module."""
    xg = x.detach().requires_grad_()

    def forward():
        with torch.no_grad():
            module(x)

    def forward_backward():
        module(xg).backward(dy)
        xg.grad = None
        module.zero_grad(set_to_none=True)

    return forward, forward_backward


def cell(case, dtype, threads, args):
    """One row: pln's times, the ratios and the errors at one shape, dtype and thread count."""
    torch.set_num_threads(threads)
    if args.compile:
        # Inductor's kernels are generated for the thread count in force; a fresh start also
        # keeps every cell's compiles clear of the recompile limit.
        torch._dynamo.reset()
    shape = case.quick_shape if args.quick else case.shape
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(shape, generator=gen).to(dtype)
    dy = torch.randn(shape, generator=gen).to(dtype)
    ours, reference = modules(case, dtype)
    sides = {"pln": ours, "eager": reference}
    if args.compile:
        sides["compiled"] = torch.compile(reference, dynamic=False)
    with torch.no_grad():
        exact = reference(x.double())
        errors = {name: relative_error(module(x), exact) for name, module in sides.items()}
    row = {"errors": errors}
    for i, pass_name in enumerate(("fwd", "fwd+bwd")):
        fns = {name: passes(module, x, dy)[i] for name, module in sides.items()}
        if pass_name == "fwd":
            # The memory-bound floor: x read and an output of its size and dtype written.
            fns["copy"] = lambda: torch.empty_like(x).copy_(x)
        times = interleaved_times_ms(fns, args.rounds)
        ms = {name: args.stat(t) for name, t in times.items()}
        row[pass_name] = ms
    return row


def ratio(row, pass_name, other):
    ms = row[pass_name]
    return ms["pln"] / ms[other] if other in ms else None


def formatted(value, spec):
    return "n/a" if value is None else format(value, spec)


def table_row(label, dtype_name, threads, row):
    errors = row["errors"]
    compiled_error = f" ({errors['compiled']:.1e})" if "compiled" in errors else ""
    ratios = [formatted(ratio(row, pass_name, other), ".2f") for other in ("compiled", "eager")
              for pass_name in ("fwd", "fwd+bwd")] + [formatted(ratio(row, "fwd", "copy"), ".2f")]
    return (f"| {label} | {dtype_name} | {threads} | {row['fwd']['pln']:.3f} | {row['fwd+bwd']['pln']:.3f} | "
            f"{' | '.join(ratios)} | {errors['pln']:.1e}{compiled_error} |")


def goals(rows):
    """The issue's goals, cell by cell: (what, met, figure)."""
    found = []
    for (label, dtype_name, threads), row in rows.items():
        where = f"{label} {dtype_name}, {threads} thread{'s' if threads > 1 else ''}"
        for pass_name in ("fwd", "fwd+bwd"):
            r = ratio(row, pass_name, "compiled")
            if r is not None:
                found.append((f"{where} {pass_name}: pln/compiled <= 1", r <= 1.0, r))
            single = rows.get((label, "float32", threads))
            if dtype_name != "float32" and single is not None:
                bound = 0.6 if pass_name == "fwd" else 0.7
                r = row[pass_name]["pln"] / single[pass_name]["pln"]
                found.append((f"{where} {pass_name}: pln time over pln's float32 <= {bound}", r <= bound, r))
        errors = row["errors"]
        if "compiled" in errors:
            bound = 2 * errors["compiled"] + torch.finfo(DTYPES[dtype_name]).eps / 2
            found.append((f"{where}: error <= 2 x compiled's + one rounding ({bound:.1e})",
                          errors["pln"] <= bound, errors["pln"]))
    return found


def machine():
    """The CPU's model name (lscpu, else /proc/cpuinfo)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def commit():
    """The checkout's commit, marked where it has uncommitted changes."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" with uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def header(args, threads, allocator):
    loaded = getattr(getattr(pln, "_library", None), "loaded_from", None)
    compiled = ("torch.compile(reference, dynamic=False), compiled afresh for every cell" if args.compile
                else "not run (--no-compile, or this torch has no torch.compile)")
    return "\n".join([
        "# pln against torch.compile of the reference module (bench/bench_compile.py)",
        "",
        f"- Software: torch {torch.__version__}; pln at {commit()} (package {Path(pln.__file__).parent}, "
        f"library {loaded or 'registered before import'}, kernels {pln.cpu_kernels()})",
        f"- Machine: {machine()}, {os.cpu_count()} logical CPUs; threads {', '.join(map(str, threads))} "
        f"(torch.set_num_threads, one process); {allocator}",
        f"- Timing: {args.stat.__name__} of {args.rounds} interleaved rounds of pln, compiled and eager per pass; "
        "ms are pln's; a ratio is pln's time over the other's (below 1: pln is faster); copy: x copied into a "
        "fresh tensor of its dtype, the bytes a forward must move at least",
        f"- Compiled: {compiled}; reference: the original module's arithmetic, statistics of half types in "
        "float32, rounded once to the dtype (PLS: transformers' LlamaRMSNorm form)",
        "- Error: max |y - ref| / max |ref|, ref the reference's arithmetic in float64 on the widened input and "
        "parameters; pln's, the compiled reference's in parentheses",
        f"- Command: `{' '.join([Path(sys.argv[0]).name, *sys.argv[1:]])}`",
        "",
        "| shape, op | dtype | threads | pln fwd ms | pln fwd+bwd ms | fwd pln/compiled | fwd+bwd pln/compiled "
        "| fwd pln/eager | fwd+bwd pln/eager | fwd pln/copy | error pln (compiled) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ])


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help=f"comma-separated, of {', '.join(DTYPES)}")
    parser.add_argument("--shapes", default=",".join(c.key for c in CASES),
                        help=f"comma-separated, of {', '.join(c.key for c in CASES + LARGE_CASES)} "
                             f"(default: all but {', '.join(c.key for c in LARGE_CASES)})")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds per pass (default 10)")
    parser.add_argument("--stat", choices=("median", "min"), default="median", help="of the rounds (default median)")
    parser.add_argument("--no-compile", action="store_true", help="leave out the torch.compile side")
    parser.add_argument("--quick", action="store_true", help="small shapes, 3 rounds (a test of the script)")
    parser.add_argument("--out", type=Path, help="also write the table here (markdown)")
    args = parser.parse_args()

    def choice(text, known, what):
        picked = [s.strip() for s in text.split(",") if s.strip()]
        unknown = [s for s in picked if s not in known]
        if unknown or not picked:
            parser.error(f"--{what}: unknown {', '.join(unknown) or '(none given)'}; expected of {', '.join(known)}")
        return picked

    args.dtype_names = choice(args.dtypes, DTYPES, "dtypes")
    keys = choice(args.shapes, [c.key for c in CASES + LARGE_CASES], "shapes")
    args.cases = [c for c in CASES + LARGE_CASES if c.key in keys]
    try:
        args.thread_counts = [int(t) for t in args.threads.split(",")]
    except ValueError:
        parser.error(f"--threads: expected comma-separated counts, got '{args.threads}'")
    if any(t < 1 for t in args.thread_counts):
        parser.error(f"--threads: counts must be positive, got '{args.threads}'")
    if args.rounds < 1:
        parser.error(f"--rounds: must be positive, got {args.rounds}")
    if args.quick:
        args.rounds = min(args.rounds, 3)
    args.stat = {"median": statistics.median, "min": min}[args.stat]
    args.compile = not args.no_compile and hasattr(torch, "compile")
    return args


def main():
    args = parse_args()
    allocator = keep_freed_memory()
    top = header(args, args.thread_counts, allocator)
    print(top, flush=True)
    lines, rows = [], {}
    for case in args.cases:
        shape = case.quick_shape if args.quick else case.shape
        label = f"`[{', '.join(map(str, shape))}]` {case.name}"
        for dtype_name in args.dtype_names:
            for threads in args.thread_counts:
                row = cell(case, DTYPES[dtype_name], threads, args)
                rows[(label, dtype_name, threads)] = row
                lines.append(table_row(label, dtype_name, threads, row))
                print(lines[-1], flush=True)
    found = goals(rows)
    missed = [f"- NOT met: {what} ({value:.3g})" for what, ok, value in found if not ok]
    summary = f"{len(found) - len(missed)} of {len(found)} goals met" + (", these not:\n\n" if missed else ".")
    summary = (summary + "\n".join(missed)) if found else ""
    if summary:
        print("\nGoals:\n\n" + summary)
    if args.out:
        args.out.write_text(top + "\n" + "\n".join(lines) + "\n" + ("\nGoals:\n\n" + summary + "\n" if summary else ""))
    if not all(math.isfinite(v) for row in rows.values() for v in row["errors"].values()):
        sys.exit("bench_compile: an output is not finite (see the error column)")


if __name__ == "__main__":
    main()
