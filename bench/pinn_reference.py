"""Plain PyTorch PINN reference for the side-by-side training benchmark: 1-D
Helmholtz -u'' + pi^2 u = 2 pi^2 sin(pi x) on [-1,1], u(+-1) = 0, exact
u = sin(pi x), float64, a PLN-Net built on the original module's composed
ParallelLN, Adam; times the training iterations after a few untimed ones.

    /usr/bin/python3 bench/pinn_reference.py --points 1000 --threads 1
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn

from bench_common import keep_freed_memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
from original import OriginalParallelLN  # noqa: E402

PI = math.pi


def make_net(width, depth, norm, group, act):
    # Linear(1,w), then depth x [norm -> act -> Linear(w,w)], the last Linear(w,1).
    layers = [nn.Linear(1, width)]
    for k in range(depth):
        if norm == "pln":
            layers.append(OriginalParallelLN(width, group, affine=False, dim=2))
        elif norm == "ln":
            layers.append(OriginalParallelLN(width, width, affine=False, dim=2))
        if act == "tanh":
            layers.append(nn.Tanh())
        layers.append(nn.Linear(width, 1 if k == depth - 1 else width))
    return nn.Sequential(*layers)


def pinn_loss(net, x, xb, bc_weight):
    x = x.detach().requires_grad_()
    u = net(x)
    du, = torch.autograd.grad(u.sum(), x, create_graph=True)
    d2u, = torch.autograd.grad(du.sum(), x, create_graph=True)
    residual = -d2u + PI**2 * u - 2 * PI**2 * torch.sin(PI * x)
    return residual.pow(2).mean() + bc_weight * net(xb).pow(2).mean()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--norm", choices=["pln", "ln", "none"], default="pln")
    parser.add_argument("--act", choices=["none", "tanh"], default="none")
    parser.add_argument("--bc-weight", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--eval", action="store_true", help="print rel L2 error on 1001 test points")
    args = parser.parse_args()
    allocator = keep_freed_memory()
    torch.set_num_threads(args.threads)
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(args.seed)

    n = args.points  # 1-D Hammersley set: x_i = -1 + 2 i / (n + 1), i = 1..n
    x = (-1 + 2 * torch.arange(1, n + 1, dtype=torch.float64) / (n + 1)).unsqueeze(1)
    xb = torch.tensor([[-1.0], [1.0]])
    net = make_net(args.width, args.depth, args.norm, args.group, args.act)
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = pinn_loss(net, x, xb, args.bc_weight)
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    loss = torch.tensor(float("nan"))
    t0 = time.perf_counter()
    for _ in range(args.iters):
        loss = step()
    seconds = time.perf_counter() - t0
    final_loss = loss.item()  # the loss of the last timed iteration, before its update
    ips = args.iters / seconds if seconds > 0 else float("inf")

    if args.json:
        print(json.dumps({"points": n, "width": args.width, "depth": args.depth, "threads": args.threads,
                          "iters": args.iters, "seconds": seconds, "iters_per_s": ips,
                          "final_loss": final_loss}))
    else:
        print(f"pinn_reference: torch {torch.__version__}, {args.threads} thread(s), {allocator}; "
              f"points {n} width {args.width} depth {args.depth} norm {args.norm} group {args.group} "
              f"act {args.act}: {args.iters} iters in {seconds:.3f} s = {ips:.2f} it/s, "
              f"final loss {final_loss:.6e}")
    if args.eval:
        xt = torch.linspace(-1, 1, 1001).unsqueeze(1)
        with torch.no_grad():
            u, ue = net(xt), torch.sin(PI * xt)
        print(f"rel L2 = {((u - ue).norm() / ue.norm()).item():.6e}")


if __name__ == "__main__":
    main()
