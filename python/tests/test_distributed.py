"""pln under torch.distributed on a two-process CPU mesh (gloo).

The test starts two worker processes itself (this file, run as a script with
--worker), which build ``init_device_mesh("cpu", (2,))`` and run every
scenario below against a one-process computation of the same thing; each
worker writes what it found to a JSON file, and one test per scenario reads
it. Everything runs in one spawn, bounded by timeouts (well under a minute on
2 cores).
"""
import copy
import json
import os
import socket
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import torch

WORLD = 2
SCENARIOS = [
    "features_sharded_aligned_groups_no_collective",
    "features_sharded_nchw_no_collective",
    "pq_norm_features_sharded_no_collective",
    "gated_features_sharded_no_collective",
    "gated_rows_sharded_partial_weight_grads",
    "gated_tensor_parallel_block",
    "rows_sharded_partial_weight_grads",
    "straddling_group_falls_back_correctly",
    "local_shard_without_whole_groups_is_an_error",
    "tensor_parallel_block",
    "sequence_parallel_block",
    "ddp_training",
    "fsdp2_training",
]


def _gloo_missing():
    if not torch.distributed.is_available():
        return "torch.distributed is not available in this torch build"
    if not torch.distributed.is_gloo_available():
        return "torch.distributed has no gloo backend in this torch build"
    try:
        from torch.distributed.tensor.experimental import register_sharding  # noqa: F401
        from torch.distributed.tensor.debug import CommDebugMode  # noqa: F401
    except ImportError as e:
        return f"torch {torch.__version__} has no DTensor register_sharding/CommDebugMode ({e})"
    return None


# ------------------------------------------------------------------- worker ---

def _close(a, b, what, atol=1e-5, rtol=1e-4):
    a = a.full_tensor() if hasattr(a, "full_tensor") else a
    b = b.full_tensor() if hasattr(b, "full_tensor") else b
    if not torch.allclose(a, b, atol=atol, rtol=rtol):
        raise AssertionError(f"{what}: max difference {(a - b).abs().max().item():.3g}")


def _count(mode):
    return mode.get_total_counts()


def _worker(rank: int, port: int, out: str) -> None:
    from datetime import timedelta

    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)

    import pln
    import pln.functional as PF
    from pln.distributed import FeatureSharded

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timedelta(seconds=60))
    mesh = init_device_mesh("cpu", (WORLD,))
    torch.manual_seed(0)
    results = {}

    def param(t, placement):
        return nn.Parameter(distribute_tensor(t.clone(), mesh, [placement]))

    def check_op(x, g, w, b, x_place, p_place, layout="features_last", expect_local=True, pq=None):
        """Forward and backward of one call on DTensors vs the same call on
        plain tensors; returns the collectives counted inside the call."""
        xr = x.clone().requires_grad_()
        wr, br = w.clone().requires_grad_(), b.clone().requires_grad_()
        fn = (lambda *a, **k: PF.pq_norm(*a, p=pq[0], q=pq[1], **k)) if pq else PF.parallel_ln
        ref = fn(xr, g, wr, br, layout=layout)
        dy = torch.randn_like(ref)
        xd = distribute_tensor(x.clone(), mesh, [x_place]).requires_grad_()
        wd, bd = param(w, p_place), param(b, p_place)
        dyd = distribute_tensor(dy, mesh, list(xd.placements))
        with CommDebugMode() as mode:
            y = fn(xd, g, wd, bd, layout=layout)
            if pq is None:
                y.backward(dyd)
        _close(y, ref, "output")
        if expect_local and tuple(y.placements) != tuple(xd.placements):
            raise AssertionError(f"output placements {y.placements}, input {xd.placements}")
        if pq is None:
            ref.backward(dy)
            _close(xd.grad, xr.grad, "grad input")
            _close(wd.grad, wr.grad, "grad weight")
            _close(bd.grad, br.grad, "grad bias")
        return _count(mode)

    def scenario(name):
        def run(fn):
            try:
                results[name] = fn() or "ok"
            except Exception:
                results[name] = "fail: " + traceback.format_exc()
            return fn
        return run

    @scenario("features_sharded_aligned_groups_no_collective")
    def _():
        C, g = 16, 4  # 8 features, 2 whole groups per rank
        n = check_op(torch.randn(4, 3, C), g, torch.randn(C), torch.randn(C), Shard(2), Shard(0))
        assert n == 0, f"{n} collectives inside the pln ops"

    @scenario("features_sharded_nchw_no_collective")
    def _():
        C, g = 8, 2
        n = check_op(torch.randn(2, C, 3, 3), g, torch.randn(C), torch.randn(C), Shard(1), Shard(0),
                     layout="features_first")
        assert n == 0, f"{n} collectives inside the pln ops"

    @scenario("pq_norm_features_sharded_no_collective")
    def _():
        C, g = 16, 4
        n = check_op(torch.randn(5, C), g, torch.randn(C), torch.randn(C), Shard(1), Shard(0), pq=(3.0, 1.5))
        assert n == 0, f"{n} collectives inside pq_norm"

    def check_gated(x, z, g, w, x_place, p_place, position):
        """check_op for the gated norm: its gate placed as the input."""
        xr, zr, wr = x.clone().requires_grad_(), z.clone().requires_grad_(), w.clone().requires_grad_()
        ref = PF.gated_norm(xr, zr, g, wr, gate_position=position)
        dy = torch.randn_like(ref)
        ref.backward(dy)
        xd = distribute_tensor(x.clone(), mesh, [x_place]).requires_grad_()
        zd = distribute_tensor(z.clone(), mesh, [x_place]).requires_grad_()
        wd = param(w, p_place)
        dyd = distribute_tensor(dy, mesh, [x_place])
        with CommDebugMode() as mode:
            y = PF.gated_norm(xd, zd, g, wd, gate_position=position)
            y.backward(dyd)
        _close(y, ref, "output")
        if tuple(y.placements) != (x_place,):
            raise AssertionError(f"output placements {y.placements}, input {x_place}")
        for got, want, what in ((xd.grad, xr.grad, "grad input"), (zd.grad, zr.grad, "grad gate"),
                                (wd.grad, wr.grad, "grad weight")):
            _close(got, want, what)
        return _count(mode)

    @scenario("gated_features_sharded_no_collective")
    def _():
        C, g = 32, 8  # Mamba-2's grouping: 16 features, 2 whole groups per rank
        for position in ("before", "after"):
            n = check_gated(torch.randn(3, 5, C), torch.randn(3, 5, C), g, torch.rand(C) + 0.5, Shard(2), Shard(0),
                            position)
            assert n == 0, f"{n} collectives inside the gated norm ({position})"

    @scenario("gated_rows_sharded_partial_weight_grads")
    def _():
        C, g = 16, 16  # one head per row, Gated DeltaNet's
        check_gated(torch.randn(4, 3, C), torch.randn(4, 3, C), g, torch.rand(C) + 0.5, Shard(0), Replicate(),
                    "after")
        x = distribute_tensor(torch.randn(4, 3, C), mesh, [Shard(1)])
        y, mean, rstd = torch.ops.pln.gated_norm_forward(x, x, None, None, -1, g)
        assert mean.placements == (Shard(1),), mean.placements
        w = distribute_tensor(torch.ones(C), mesh, [Replicate()])
        _, _, dw, _ = torch.ops.pln.gated_norm_backward(y, x, x, mean, rstd, w, None, -1, g)
        assert dw.placements[0].is_partial(), dw.placements

    @scenario("gated_tensor_parallel_block")
    def _():
        # A Mamba-2 mixer's tail: in-projections to x and the gate, split by
        # features across the ranks, the gated norm on each rank's groups, and
        # the out-projection summing the ranks' parts.
        class Tail(nn.Module):
            def __init__(self, gated=True):
                super().__init__()
                self.to_x, self.to_z = nn.Linear(16, 32), nn.Linear(16, 32)
                self.norm, self.out = pln.GatedNorm(32, 8, 1e-6), nn.Linear(32, 16)
                self.gated = gated

            def forward(self, h):
                x, z = self.to_x(h), self.to_z(h)
                return self.out(self.norm(x, z) if self.gated else x * z)

        def sharded(tail):
            plan = {"to_x": ColwiseParallel(use_local_output=False), "to_z": ColwiseParallel(use_local_output=False),
                    "out": RowwiseParallel()}
            if tail.gated:
                plan["norm"] = FeatureSharded()
            return parallelize_module(copy.deepcopy(tail), mesh, plan)

        torch.manual_seed(3)
        ref = Tail()
        model, base = sharded(ref), sharded(Tail(gated=False))
        h = torch.randn(2, 5, 16)
        with CommDebugMode() as mode:
            y = model(h)
        _close(y, ref(h), "block output")
        with CommDebugMode() as without:
            base(h)
        assert _count(mode) == _count(without), f"the gated norm added collectives: {_count(mode)} vs {_count(without)}"

    @scenario("rows_sharded_partial_weight_grads")
    def _():
        C, g = 12, 4
        check_op(torch.randn(6, 5, C), g, torch.randn(C), torch.randn(C), Shard(0), Replicate())
        check_op(torch.randn(2, 5, C), g, torch.randn(C), torch.randn(C), Shard(1), Replicate())
        # The statistics and the weight gradient's placements, op by op.
        x = distribute_tensor(torch.randn(6, 5, C), mesh, [Shard(1)])
        y, mean, rstd = torch.ops.pln.parallel_ln_forward(x, None, None, -1, g, layout="ntc")
        assert tuple(mean.shape) == (6, 5, C // g) and mean.placements == (Shard(1),), (mean.shape, mean.placements)
        _, dw, db = torch.ops.pln.parallel_ln_backward(y, x, mean, rstd, None, -1, g, layout="ntc")
        assert dw.placements[0].is_partial() and db.placements[0].is_partial(), (dw.placements, db.placements)

    @scenario("straddling_group_falls_back_correctly")
    def _():
        C, g = 12, 4  # 6 features per rank: the second group straddles the ranks
        n = check_op(torch.randn(4, C), g, torch.randn(C), torch.randn(C), Shard(1), Shard(0),
                     expect_local=False)
        assert n > 0, "a straddling group was computed without a collective"

    @scenario("local_shard_without_whole_groups_is_an_error")
    def _():
        local = distribute_tensor(torch.randn(4, 12), mesh, [Shard(1)]).to_local()  # 6 features
        try:
            torch.ops.pln.parallel_ln(local, None, None, PF.LOCAL_WIDTH, 4, layout="nc")
        except RuntimeError as e:
            assert "width, 6 features" in str(e) and "num_per_group = 4" in str(e), str(e)
        else:
            raise AssertionError("a 6-feature shard with groups of 4 ran")
        # A plan entry that promises local groups refuses a mesh that splits one.
        try:
            parallelize_module(pln.ParallelLN(12, 4, layout="features_last"), mesh, FeatureSharded())
        except ValueError as e:
            assert "12 features over 2 ranks leave 6 per rank" in str(e) and "num_per_group = 4" in str(e), str(e)
        else:
            raise AssertionError("FeatureSharded split a group of 4 across 2 ranks")

    def block(norm_in=False):
        torch.manual_seed(1)
        layers = [pln.ParallelLN(16, 4, layout="features_last")] if norm_in else []
        layers += [nn.Linear(16, 32), pln.ParallelLN(32, 8, layout="features_last"), nn.Linear(32, 16)]
        return nn.Sequential(*layers)

    def train(model, xs, steps=3, count=None):
        """SGD on the mean square of the output; `count`: the global output's
        size, where each rank holds a part of it (the ranks' losses add up)."""
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for x in xs[:steps]:
            y = model(x)
            loss = y.square().sum() / (count or y.numel())
            opt.zero_grad()
            loss.backward()
            opt.step()
        return model

    def same_params(model, ref):
        for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
            _close(p.detach(), q.detach(), name)

    @scenario("tensor_parallel_block")
    def _():
        torch.manual_seed(2)
        xs = [torch.randn(4, 3, 16) for _ in range(3)]
        ref = train(block(), xs)
        model = parallelize_module(block(), mesh, {"0": ColwiseParallel(use_local_output=False),
                                                   "1": FeatureSharded(), "2": RowwiseParallel()})
        assert model[1].weight.placements == (Shard(0),)
        with CommDebugMode() as mode:
            model(xs[0]).sum().backward()
        plain = parallelize_module(nn.Sequential(nn.Linear(16, 32), nn.Identity(), nn.Linear(32, 16)), mesh,
                                   {"0": ColwiseParallel(use_local_output=False), "2": RowwiseParallel()})
        with CommDebugMode() as base:
            plain(xs[0]).sum().backward()
        assert _count(mode) == _count(base), f"PLN added collectives: {_count(mode)} vs {_count(base)}"
        model = parallelize_module(block(), mesh, {"0": ColwiseParallel(use_local_output=False),
                                                   "1": FeatureSharded(), "2": RowwiseParallel()})
        train(model, xs)
        same_params(model, ref)

    @scenario("sequence_parallel_block")
    def _():
        torch.manual_seed(3)
        xs = [torch.randn(2, 6, 16) for _ in range(3)]
        ref = train(block(norm_in=True), xs)
        plan = {"0": SequenceParallel(), "1": ColwiseParallel(input_layouts=Shard(1), use_local_output=False),
                "2": FeatureSharded(), "3": RowwiseParallel(output_layouts=Shard(1))}
        model = parallelize_module(block(norm_in=True), mesh, plan)
        rows = slice(rank * 3, rank * 3 + 3)
        # Each rank feeds its part of the sequence; its output is that part.
        train(model, [x[:, rows] for x in xs], count=xs[0].numel())
        same_params(model, ref)
        y = model(xs[0][:, rows])
        _close(y, ref(xs[0])[:, rows], "sequence-parallel output")

    def net():
        torch.manual_seed(4)
        return nn.Sequential(nn.Linear(8, 16), pln.ParallelLN(16, 4, layout="features_last"), nn.Linear(16, 16), pln.ParallelLN(16, 4, layout="features_last"),
                             nn.Linear(16, 1))

    def data():
        torch.manual_seed(5)
        return [(torch.randn(8, 8), torch.randn(8, 1)) for _ in range(3)]

    def fit(model, batches, shard):
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for x, t in batches:
            if shard:
                x, t = x[rank * 4:rank * 4 + 4], t[rank * 4:rank * 4 + 4]
            loss = ((model(x) - t) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return model

    @scenario("ddp_training")
    def _():
        ref = fit(net(), data(), shard=False)
        model = fit(nn.parallel.DistributedDataParallel(net()), data(), shard=True).module
        same_params(model, ref)

    @scenario("fsdp2_training")
    def _():
        try:
            from torch.distributed.fsdp import fully_shard
        except ImportError as e:
            return f"skip: torch {torch.__version__} has no fully_shard ({e})"
        ref = fit(net(), data(), shard=False)
        model = net()
        try:
            for layer in model:
                fully_shard(layer, mesh=mesh)
            fully_shard(model, mesh=mesh)
            fit(model, data(), shard=True)
        except Exception as e:
            return f"skip: FSDP2 (fully_shard) cannot run on this CPU mesh in torch {torch.__version__}: {e!r}"
        same_params(model, ref)

    Path(out).joinpath(f"rank{rank}.json").write_text(json.dumps(results))
    dist.barrier()
    dist.destroy_process_group()


# -------------------------------------------------------------------- tests ---

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    reason = _gloo_missing()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("distributed")
    port = _free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(r), str(port), str(out)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(WORLD)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=100)[0])
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail("the two workers did not finish within 100 s")
    merged = {}
    for r, p in enumerate(procs):
        path = out / f"rank{r}.json"
        assert p.returncode == 0 and path.exists(), f"worker {r} exited with {p.returncode}:\n{logs[r][-4000:]}"
        for name, result in json.loads(path.read_text()).items():
            if merged.get(name, "ok") == "ok" or result.startswith("fail"):
                merged[name] = result if result == "ok" or result.startswith(("fail", "skip")) else result
    return merged


@pytest.mark.parametrize("name", SCENARIOS)
def test_two_ranks(outcomes, name):
    result = outcomes.get(name, "fail: not run")
    if result.startswith("skip: "):
        pytest.skip(result[len("skip: "):])
    assert result == "ok", result


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    torch.set_num_threads(1)
    _worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
