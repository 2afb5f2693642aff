"""A tensor-parallel block on 2 CPU ranks (gloo): ColwiseParallel Linear ->
norm -> RowwiseParallel Linear, with the norm either pln.ParallelLN over the
features each rank holds (whole groups: no collective) or torch.nn.LayerNorm
(which needs every feature: DTensor gathers the sharded activation, and
scatters its gradient back).

Reports, per training step (forward + backward + SGD step), the collectives
and the bytes they move as CommDebugMode counts them (rank 0's view; the
block's two Linear layers' own collectives are included in both columns), and
the time per step (min and median of N, after warm-up).

    PLN_LIBRARY=build-t2/libpln.so python bench/bench_distributed.py [--tokens 2048 --width 1024 --group 64]
"""
import argparse
import os
import socket
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))


def worker(rank, world, port, args, out):
    from datetime import timedelta

    import torch.distributed as dist
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    import pln
    from pln.distributed import FeatureSharded
    from torch.distributed.tensor import DTensor, distribute_module
    from torch.distributed.tensor.debug import _comm_mode

    class BytesCommDebugMode(CommDebugMode):
        """CommDebugMode that also adds up the bytes of each collective's tensor arguments."""

        def __init__(self):
            super().__init__()
            self.bytes = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not any(t == DTensor for t in types):
                packet = func._overloadpacket
                if packet in self.comm_registry or packet in _comm_mode.c10d_collective_ops:
                    self.bytes += sum(t.numel() * t.element_size() for t in torch.utils._pytree.tree_leaves(args)
                                      if isinstance(t, torch.Tensor))
            return super().__torch_dispatch__(func, types, args, kwargs)

    torch.set_num_threads(args.threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=120))
    mesh = init_device_mesh("cpu", (world,))
    D, H = args.width, args.hidden
    rows = []
    for name in ("pln.ParallelLN", "nn.LayerNorm"):
        torch.manual_seed(0)
        norm = pln.ParallelLN(H, args.group, layout="features_last") if name.startswith("pln") else nn.LayerNorm(H)
        model = nn.Sequential(nn.Linear(D, H), norm, nn.Linear(H, D))
        plan = {"0": ColwiseParallel(use_local_output=False), "2": RowwiseParallel()}
        if name.startswith("pln"):
            plan["1"] = FeatureSharded()
        else:  # replicated weights; DTensor gathers the sharded features for it
            distribute_module(model[1], mesh)
        model = parallelize_module(model, mesh, plan)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        x = torch.randn(args.tokens, D)

        def step():
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()

        # Collectives of one step, and the bytes of the tensors each sends.
        with BytesCommDebugMode() as mode:
            step()
        moved = {"": mode.bytes}
        counts = {str(k).split(".")[-1]: v for k, v in mode.get_comm_counts().items()}
        for _ in range(args.warmup):
            step()
        times = []
        for _ in range(args.repeats):
            dist.barrier()
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        rows.append((name, mode.get_total_counts(), counts, sum(moved.values()), min(times),
                     statistics.median(times)))
    if rank == 0:
        lines = [f"tensor-parallel block Linear({D},{H}) -> norm -> Linear({H},{D}), {args.tokens} tokens, "
                 f"{world} CPU ranks (gloo), {args.threads} thread(s) each, float32, group {args.group} "
                 f"({H // world} features per rank); per training step:",
                 f"{'norm':<16}{'collectives':>12}{'bytes':>14}{'min ms':>10}{'median ms':>11}  kinds"]
        for name, n, counts, b, tmin, tmed in rows:
            kinds = ", ".join(f"{k} x{v}" for k, v in sorted(counts.items()))
            lines.append(f"{name:<16}{n:>12}{b:>14,}{tmin * 1e3:>10.2f}{tmed * 1e3:>11.2f}  {kinds}")
        Path(out).write_text("\n".join(lines) + "\n")
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--group", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench_distributed_{os.getpid()}.txt"
    mp.spawn(worker, args=(2, port, args, str(out)), nprocs=2, join=True)
    print(out.read_text(), end="")
    out.unlink()


if __name__ == "__main__":
    main()
