"""CPU timings of the gated norm, side by side in one run: the fused operator
(pln.GatedNorm) against transformers' own classes, eager and under
torch.compile, forward and forward+backward, float32 and bfloat16, on the
shapes of real models:

  mamba2    Mamba-2 2.7B's gated norm: d_inner 5120 in one group (n_groups 1),
            gate before the norm (MambaRMSNormGated)
  qwen3next Qwen3-Next's: 32 value heads of 128, one norm per head, gate after
            the norm (Qwen3NextRMSNormGated)

on 8 x 2048 tokens (--tokens). Each time is the median of R calls after a
warm-up; ratios are the other's time over the fused op's.

--block T also times one Mamba-2 2.7B mixer (transformers' Mamba2Mixer with
random weights: hidden 2560, d_inner 5120 in 80 heads of 64, state 128, one
group), forward+backward on T tokens, as built and after pln.convert(model,
"same"): the share of a real block that the norm is.

    PYTHONPATH=python .venv/bin/python bench/bench_gated.py [--threads N] [--block T] [--quick]
"""

import argparse
import copy
import statistics
import sys
import time

import torch

from bench_common import ROOT

sys.path.insert(0, str(ROOT / "python" / "tests"))
import pln  # noqa: E402
from shared import mamba2_gated_norm  # noqa: E402


def median_time(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def modules(kind, dtype):
    MambaRMSNormGated = mamba2_gated_norm()
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextRMSNormGated
    if kind == "mamba2":
        theirs = MambaRMSNormGated(5120, group_size=5120, eps=1e-5)
        ours = pln.GatedNorm(5120, 5120, 1e-5)
        shape = lambda tokens: (tokens, 5120)
    else:
        theirs = Qwen3NextRMSNormGated(128, eps=1e-6)
        ours = pln.GatedNorm(128, 128, 1e-6, gate_position="after")
        shape = lambda tokens: (tokens, 32, 128)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5)
    ours.load_state_dict(theirs.state_dict())
    return theirs.to(dtype), ours.to(dtype), shape


def run(kind, dtype, tokens, reps, compile_too):
    theirs, ours, shape = modules(kind, dtype)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape(tokens), generator=gen).to(dtype)
    z = torch.randn(shape(tokens), generator=gen).to(dtype)
    dy = torch.randn(shape(tokens), generator=gen).to(dtype)
    with torch.no_grad():
        torch.testing.assert_close(ours(x, z).float(), theirs(x, z).float(), atol=3e-2, rtol=3e-2)
    contenders = {"fused": ours, "eager": theirs}
    if compile_too:
        contenders["compiled"] = torch.compile(theirs, fullgraph=True)
    rows = {}
    for name, module in contenders.items():
        def forward():
            with torch.no_grad():
                module(x, z)

        xg, zg = x.clone().requires_grad_(), z.clone().requires_grad_()

        def both():
            module(xg, zg).backward(dy)

        rows[name] = (median_time(forward, reps), median_time(both, reps))
    return rows


def mamba2_block(tokens, reps):
    """Forward+backward of one Mamba-2 2.7B mixer, as built and converted (ms)."""
    from transformers import Mamba2Config
    from transformers.models.mamba2.modeling_mamba2 import Mamba2Mixer
    config = Mamba2Config(hidden_size=2560, num_heads=80, head_dim=64, expand=2, n_groups=1, state_size=128,
                          num_hidden_layers=1, chunk_size=256)
    torch.manual_seed(0)
    original = Mamba2Mixer(config, layer_idx=0)
    converted = copy.deepcopy(original)
    conversion = pln.convert(converted, "same")
    assert any(isinstance(m, pln.GatedNorm) for m in converted.modules()), conversion
    x = torch.randn(1, tokens, 2560)
    dy = torch.randn(1, tokens, 2560)
    with torch.no_grad():
        torch.testing.assert_close(converted(x), original(x), atol=1e-4, rtol=1e-4)
    times = {}
    for name, module in (("as built", original), ("converted", converted)):
        xg = x.clone().requires_grad_()
        times[name] = median_time(lambda: module(xg).backward(dy), reps)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=8 * 2048)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--no-compile", action="store_true", help="leave out the torch.compile column")
    parser.add_argument("--block", type=int, default=0, metavar="T",
                        help="also time a Mamba-2 2.7B mixer on T tokens, as built and converted")
    parser.add_argument("--quick", action="store_true", help="256 tokens, 2 calls, no compile (a test)")
    args = parser.parse_args()
    if args.quick:
        args.tokens, args.reps, args.no_compile = 256, 2, True
    torch.set_num_threads(args.threads)
    print(f"gated norm, CPU, {args.threads} thread(s), {args.tokens} tokens, median of {args.reps} calls; "
          f"torch {torch.__version__}, pln kernels {pln.cpu_kernels()}")
    print(f"{'shape':<10} {'dtype':<9} {'pass':<8} {'fused ms':>9} {'eager ms':>9} {'eager/fused':>12}"
          + ("" if args.no_compile else f" {'compiled ms':>12} {'compiled/fused':>15}"))
    for kind in ("mamba2", "qwen3next"):
        for dtype in (torch.float32, torch.bfloat16):
            rows = run(kind, dtype, args.tokens, args.reps, not args.no_compile)
            for i, label in enumerate(("fwd", "fwd+bwd")):
                fused, eager = rows["fused"][i], rows["eager"][i]
                line = (f"{kind:<10} {str(dtype).replace('torch.', ''):<9} {label:<8} {fused * 1e3:9.2f} "
                        f"{eager * 1e3:9.2f} {eager / fused:11.2f}x")
                if "compiled" in rows:
                    compiled = rows["compiled"][i]
                    line += f" {compiled * 1e3:12.2f} {compiled / fused:14.2f}x"
                print(line)
    if args.block:
        times = mamba2_block(args.block, args.reps)
        built, converted = times["as built"], times["converted"]
        print(f"Mamba-2 2.7B mixer, {args.block} tokens, float32, forward+backward: as built {built * 1e3:.1f} ms, "
              f"converted {converted * 1e3:.1f} ms ({built / converted:.2f}x)")


if __name__ == "__main__":
    main()
