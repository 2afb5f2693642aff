"""PINN training throughput, side by side in one run: `pln pinn` (Taylor-mode
jets over the fused kernels) against bench/pinn_reference.py (plain PyTorch,
the original module's composed PLN, u'' by differentiating twice), same
network (width 128, 3 hidden PLN(4) layers), points, float64 and threads.
Both sides get OPENBLAS_NUM_THREADS = --threads, so "one thread" is one core.

    /usr/bin/python3 bench/bench_pinn.py [--points 1000,5000] [--threads 1] [--quick]
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_common import best_alternating, side_by_side_parser, side_by_side_setup

ROOT = Path(__file__).resolve().parents[1]


def run_cpp(pln, points, width, depth, threads, iters, env):
    with tempfile.TemporaryDirectory() as out:
        cmd = [str(pln), "pinn", "--preset", "cpu", "--threads", str(threads), "--out", out, "--set",
               f"n_interior={points}", f"width={width}", f"depth={depth}", "norm=pln", "group=4",
               "act=none", f"steps={iters}", "ntk_every=0", "eval_every=0", "lr=1e-3"]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        return json.loads((Path(out) / "summary.json").read_text())["steps_per_s"]


def run_python(points, width, depth, threads, iters, env):
    cmd = [sys.executable, str(ROOT / "bench" / "pinn_reference.py"), "--points", str(points),
           "--width", str(width), "--depth", str(depth), "--threads", str(threads),
           "--iters", str(iters), "--json"]
    out = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["iters_per_s"]


def main():
    parser = side_by_side_parser(__doc__, "few points and iterations (a test)")
    parser.add_argument("--points", default="1000,5000")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--depth", type=int, default=3)
    args = parser.parse_args()
    env, repeats = side_by_side_setup(args, "bench_pinn")
    points = [200] if args.quick else [int(p) for p in args.points.split(",")]
    print(f"PINN training, 1-D Helmholtz, width {args.width}, {args.depth} hidden PLN(4) layers, "
          f"float64, Adam, {args.threads} thread(s), best of {repeats} runs per side")
    print(f"{'points':>7} {'pln it/s':>10} {'PyTorch it/s':>13} {'ratio':>7}")
    for n in points:
        # A few seconds per run; the sides alternate so drifting machine load hits both.
        cpp_iters = 10 if args.quick else max(20, 200_000 // n)
        py_iters = 3 if args.quick else max(5, 40_000 // n)
        cpp, py = best_alternating(
            lambda: run_cpp(args.pln, n, args.width, args.depth, args.threads, cpp_iters, env),
            lambda: run_python(n, args.width, args.depth, args.threads, py_iters, env),
            repeats)
        print(f"{n:>7} {cpp:>10.2f} {py:>13.2f} {cpp / py:>6.1f}x", flush=True)


if __name__ == "__main__":
    main()
