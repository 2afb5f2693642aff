"""Fourier-fitting training throughput, side by side in one run: `pln fourier`
against a plain PyTorch training step with the original module's composed
PLN: Linear(1, 512) -> PLN(4) -> Linear(512, 1) on 1,024 points, float32,
full-batch Adam on the MSE, one thread (OPENBLAS_NUM_THREADS too).

    /usr/bin/python3 bench/bench_fourier.py [--width 512] [--points 1024] [--threads 1] [--quick]
"""

import os

from bench_common import (best_alternating, pln_summary_value, python_prelude, python_rate,
                          side_by_side_parser, side_by_side_setup)


def run_cpp(pln, width, points, threads, steps, env):
    return pln_summary_value(
        [pln, "fourier", "--preset", "cpu", "--threads", threads, "--set", "layer=pln", "group=4",
         f"width={width}", f"n_train={points}", "K=8", f"steps={steps}", "log_every=1000000"], "steps_per_s", env)


def run_python(width, points, threads, steps):
    """One process per side keeps the comparison honest; this is the plain script's loop."""
    code = python_prelude(threads) + f"""
x = torch.linspace(-1, 1, {points}).unsqueeze(1)
y = torch.sin(math.pi * 3 * x)
net = torch.nn.Sequential(torch.nn.Linear(1, {width}), OriginalParallelLN({width}, 4, dim=2),
                          torch.nn.Linear({width}, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(net(x), y)
    loss.backward()
    opt.step()
for _ in range(10):
    step()
t0 = time.perf_counter()
for _ in range({steps}):
    step()
print({steps} / (time.perf_counter() - t0))
"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    return python_rate(code, env)


def main():
    parser = side_by_side_parser(__doc__, "few steps (a test)")
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--points", type=int, default=1024)
    args = parser.parse_args()
    env, repeats = side_by_side_setup(args, "bench_fourier")
    steps = 20 if args.quick else 2000
    cpp, py = best_alternating(lambda: run_cpp(args.pln, args.width, args.points, args.threads, steps, env),
                               lambda: run_python(args.width, args.points, args.threads, steps // 2), repeats)
    print(f"Fourier fitting step, PLN(4)-Net width {args.width}, {args.points} points, float32, Adam, "
          f"{args.threads} thread(s), best of {repeats} runs per side")
    print(f"{'pln steps/s':>12} {'PyTorch steps/s':>16} {'ratio':>7}")
    print(f"{cpp:>12.1f} {py:>16.1f} {cpp / py:>6.1f}x")


if __name__ == "__main__":
    main()
