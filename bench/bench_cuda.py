"""GPU timings of the operator, side by side in one run, with CUDA events:
the median of R calls after warm-up, forward and forward+backward, float32
and bfloat16, on the C++ benchmark's three shapes and on the same shapes
scaled up to at least 256 MiB.

  fused      torch.ops.pln.parallel_ln (the fused CUDA kernels; PLN_CUDA_KERNELS=1)
  composed   the original module's composed ATen ops, eager
  ln-view    F.layer_norm over the grouped view (g values last; NCHW transposed
             to it first), then the affine parameters: ATen's own norm kernel
  compiled   the original module under torch.compile (Inductor's fused kernel)
  copy       a device-to-device copy of the same tensor: the memory floor

Ratios are times over the fused op's (over the copy's for `fused/copy`).
Bandwidth: the bytes the pass must move at least (forward: read x, write y;
forward+backward: that, then read x and dy and write dx; the copy: read and
write the tensor) over its time, in TB/s and as a fraction of the GPU's peak
(--peak-tbs, 4.8 for an H200), for the fused op and the copy.
The goals (an H200, tensors of 256 MiB or more): forward at most 1.15x a copy
for features-last layouts and 1.3x for NCHW; forward+backward at least 5x
faster than composed.

    PLN_CUDA_KERNELS=1 PLN_LIBRARY=build-torch2/libpln.so PYTHONPATH=python \\
        python bench/bench_cuda.py --out results.md
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
import pln  # noqa: E402,F401  (registers torch.ops.pln)
from original import OriginalParallelLN  # noqa: E402

# label, shape, C, g, dim (4: NCHW, 3: [N, T, C], 2: [N, C])
SHAPES = [
    ("MLP [4096,512] g=8", (4096, 512), 512, 8, 2),
    ("tokens [128,65,384] g=8", (128, 65, 384), 384, 8, 3),
    ("NCHW [128,64,32,32] g=16", (128, 64, 32, 32), 64, 16, 4),
]
LARGE_BYTES = 256 << 20
LAYOUT = {2: "nc", 3: "ntc", 4: "nchw"}


def scaled(shape, itemsize):
    """The shape with its batch scaled until the tensor holds at least 256 MiB."""
    numel = 1
    for s in shape:
        numel *= s
    factor = max(1, -(-LARGE_BYTES // (numel * itemsize)))
    return (shape[0] * factor,) + tuple(shape[1:])


def median_ms(fn, reps, device, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    if device.type != "cuda":  # --device cpu: a smoke run of this script on a machine without a GPU
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    torch.cuda.synchronize()
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def sides(x, dy, c, g, dim, backward, compile_original):
    layout = LAYOUT[dim]
    w = (torch.rand(c, device=x.device) + 0.5).to(x.dtype).requires_grad_(backward)
    b = torch.randn(c, device=x.device).to(x.dtype).requires_grad_(backward)
    original = OriginalParallelLN(c, g, dim=dim).to(x.device, x.dtype)
    xg = x.detach().requires_grad_(backward)
    out = torch.empty_like(x)

    def fused():
        return torch.ops.pln.parallel_ln(xg, w, b, c, g, layout=layout)

    def composed():
        return original(xg)

    def ln_view():
        if dim == 4:
            n, _, h, wd = x.shape
            v = xg.view(n, c // g, g, h * wd).transpose(2, 3)
            y = F.layer_norm(v, (g,)).transpose(2, 3).reshape(x.shape)
            return y * w.view(1, c, 1, 1) + b.view(1, c, 1, 1)
        y = F.layer_norm(xg.view(*x.shape[:-1], c // g, g), (g,)).reshape(x.shape)
        return y * w + b

    fns = {"fused": fused, "composed": composed, "ln-view": ln_view}
    if compile_original:
        compiled = torch.compile(original, dynamic=False)
        fns["compiled"] = lambda: compiled(xg)

    def timed(fn):
        if not backward:
            def run():
                with torch.no_grad():
                    fn()
            return run

        def run():
            fn().backward(dy)
            xg.grad = None
            w.grad = b.grad = None
            for p in original.parameters():
                p.grad = None
        return run

    result = {name: timed(fn) for name, fn in fns.items()}
    result["copy"] = lambda: out.copy_(x)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="small shapes, few repetitions (a smoke run)")
    parser.add_argument("--no-compile", action="store_true", help="leave out the torch.compile side")
    parser.add_argument("--out", type=Path, help="also write the table here (markdown)")
    parser.add_argument("--peak-tbs", type=float, default=4.8,
                        help="the GPU's peak memory bandwidth in TB/s (4.8: an H200)")
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu for a smoke run of the script")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_cuda: no CUDA device is visible")
    if device.type == "cuda" and os.environ.get("PLN_CUDA_KERNELS") != "1":
        print("bench_cuda: PLN_CUDA_KERNELS is not 1: `fused` is the composite path", file=sys.stderr)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "none (CPU smoke run)"
    header = (f"{device.type.upper()} {name}, torch {torch.__version__}, median of {args.reps} calls "
              f"({'CUDA events' if device.type == 'cuda' else 'wall clock'})\n\n"
              "| shape | dtype | MiB | pass | fused ms | copy ms | fused/copy | composed | ln-view | compiled "
              f"| fused TB/s (of {args.peak_tbs:g}) | copy TB/s |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    print(header, end="", flush=True)
    lines, goals = [], []
    for label, shape, c, g, dim in SHAPES:
        for dtype in (torch.float32, torch.bfloat16):
            itemsize = torch.empty((), dtype=dtype).element_size()
            for size in ([shape] if args.quick else [shape, scaled(shape, itemsize)]):
                if args.quick:
                    size = (max(2, size[0] // 16),) + tuple(size[1:])
                x = torch.randn(size, device=device, dtype=dtype)
                dy = torch.randn_like(x)
                mib = x.numel() * itemsize / 2**20
                for backward in (False, True):
                    fns = sides(x, dy, c, g, dim, backward, not args.no_compile and hasattr(torch, "compile"))
                    ms = {k: median_ms(fn, 3 if args.quick else args.reps, device) for k, fn in fns.items()}
                    pass_name = "fwd+bwd" if backward else "fwd"
                    ratio = {k: ms[k] / ms["fused"] for k in ms}
                    compiled = f"{ratio['compiled']:.2f}x" if "compiled" in ratio else "n/a"
                    nbytes = x.numel() * itemsize
                    fused_tbs = (5 if backward else 2) * nbytes / (ms["fused"] * 1e-3) / 1e12
                    copy_tbs = 2 * nbytes / (ms["copy"] * 1e-3) / 1e12
                    line = (f"| {label.split(' ')[0]} {list(size)} g={g} | {str(dtype).split('.')[-1]} | {mib:.0f} | "
                            f"{pass_name} | {ms['fused']:.3f} | {ms['copy']:.3f} | {ms['fused'] / ms['copy']:.2f} | "
                            f"{ratio['composed']:.2f}x | {ratio['ln-view']:.2f}x | {compiled} | "
                            f"{fused_tbs:.2f} ({fused_tbs / args.peak_tbs:.0%}) | "
                            f"{copy_tbs:.2f} ({copy_tbs / args.peak_tbs:.0%}) |")
                    print(line, flush=True)
                    lines.append(line)
                    if mib >= 256 and not backward:
                        limit = 1.3 if dim == 4 else 1.15
                        goals.append((f"{label} {str(dtype).split('.')[-1]} fwd <= {limit}x copy",
                                      ms["fused"] / ms["copy"] <= limit, ms["fused"] / ms["copy"]))
                    if mib >= 256 and backward:
                        goals.append((f"{label} {str(dtype).split('.')[-1]} fwd+bwd >= 5x faster than composed",
                                      ratio["composed"] >= 5.0, ratio["composed"]))
    summary = "\n".join(f"- {'met' if ok else 'NOT met'}: {what} ({value:.2f})" for what, ok, value in goals)
    if summary:
        print("\n" + summary)
    if args.out:
        args.out.write_text(header + "\n".join(lines) + "\n" + ("\n" + summary + "\n" if summary else ""))


if __name__ == "__main__":
    main()
