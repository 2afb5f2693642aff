"""The operators under torch.compile, torch.export and AOTInductor (run from
Python and from the C++ runner, examples/run_exported)."""

import os
import subprocess
from pathlib import Path

import pytest
import torch

import pln
from original import OriginalParallelLN
from shared import needs_torch2, run_python

pytestmark = needs_torch2


# ---------------------------------------------------------- torch.compile ---

class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(3, 32), pln.ParallelLN(32, 4, dim=2),
                                       torch.nn.Linear(32, 32), pln.PLS(32, 8, dim=2),
                                       torch.nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), pln.ParallelLN(16, 4),
                                       torch.nn.Conv2d(16, 16, 3, padding=1), pln.ParallelLN(16, 8),
                                       torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                       torch.nn.Linear(16, 10))

    def forward(self, x):
        return self.net(x)


class Block(torch.nn.Module):
    """A pre-norm transformer block with PLN at both norm sites."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.norm1 = pln.ParallelLN(width, 8, dim=3)
        self.attn = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = pln.ParallelLN(width, 8, dim=3)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.GELU(),
                                       torch.nn.Linear(2 * width, width))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


def model_and_input(kind, batch=4, seed=0):
    torch.manual_seed(seed)
    if kind == "mlp":
        return MLP(), torch.randn(batch, 3)
    if kind == "block":
        return Block(), torch.randn(batch, 7, 32)
    x = torch.randn(batch, 3, 6, 6)
    model = CNN()
    if kind == "cnn_channels_last":
        model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    return model, x


def forward_and_grads(run, model, x):
    """run(x) computes with model's parameters (the compiled module shares them)."""
    model.zero_grad()
    x = x.detach().clone().requires_grad_()
    y = run(x)
    y.square().sum().backward()
    return y.detach(), x.grad, {n: p.grad.clone() for n, p in model.named_parameters()}


def assert_same_training_step(eager, compiled, x):
    y, dx, grads = forward_and_grads(eager, eager, x)
    yc, dxc, gradsc = forward_and_grads(compiled, eager, x)
    torch.testing.assert_close(yc, y, atol=2e-5, rtol=2e-5)
    torch.testing.assert_close(dxc, dx, atol=2e-4, rtol=2e-4)
    for name in grads:
        torch.testing.assert_close(gradsc[name], grads[name], atol=2e-4, rtol=2e-4, msg=name)


@pytest.mark.parametrize("kind", ["mlp", "cnn", "cnn_channels_last", "block"])
def test_compile_fullgraph_matches_eager(kind):
    torch._dynamo.reset()
    model, x = model_and_input(kind)
    compiled = torch.compile(model, fullgraph=True)
    assert_same_training_step(model, compiled, x)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), atol=2e-5, rtol=2e-5)


def test_compile_dynamic_batch_sizes_compile_once():
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    model, _ = model_and_input("cnn")
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend=counter)
    compiles = []
    for batch in (5, 7, 9):  # none equal to a static size (duck sizing would tie them)
        _, x = model_and_input("cnn", batch=batch, seed=batch)
        assert_same_training_step(model, compiled, x)
        compiles.append(counter.frame_count)
    # The first call may trace twice (dynamo restarts once to specialise eps); no batch size recompiles.
    assert compiles[0] >= 1 and compiles[1:] == compiles[:1] * 2, compiles


def test_composite_paths_compile_once_for_every_batch_size():
    """PQNorm beyond p = 2 runs the composite formulation: under dynamic
    shapes it reads no size, so no batch size recompiles, and the training
    step matches eager."""
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    model = torch.nn.Sequential(torch.nn.Linear(3, 16), pln.PQNorm(16, 4, p=3.0, q=1.5, dim=2),
                                torch.nn.Linear(16, 1))
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend=counter)
    compiles = []
    for batch in (5, 7, 9):
        torch.manual_seed(batch)
        assert_same_training_step(model, compiled, torch.randn(batch, 3))
        compiles.append(counter.frame_count)
    assert compiles[0] >= 1 and compiles[1:] == compiles[:1] * 2, compiles


def test_compiled_training_graphs_call_the_fused_ops():
    """Under torch.compile the forward graph holds pln.parallel_ln_forward and
    the backward graph pln.parallel_ln_backward (the fused kernels), and an
    inference graph pln.parallel_ln: nothing is decomposed."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    graphs = []

    def record(gm, example_inputs):
        graphs.append({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    model, x = model_and_input("mlp")
    compiled = torch.compile(model, fullgraph=True, backend=aot_autograd(fw_compiler=record, bw_compiler=record))
    compiled(x.requires_grad_()).sum().backward()
    assert len(graphs) == 2
    assert "pln.parallel_ln_forward.default" in graphs[0]
    assert "pln.parallel_ln_backward.default" in graphs[1]
    graphs.clear()
    torch._dynamo.reset()
    with torch.no_grad():
        compiled(x.detach())
    assert "pln.parallel_ln.default" in graphs[0]


def test_compile_reports_a_bad_input_with_the_operator_message():
    torch._dynamo.reset()
    compiled = torch.compile(pln.ParallelLN(16, 4, dim=2), fullgraph=True)
    with pytest.raises(Exception, match=r"expected 16 features on axis 1 of the NC input, got 12"):
        compiled(torch.randn(3, 12))


# ---------------------------------------------------------- torch.export ---

def test_export_runs_and_matches_eager_with_dynamic_batch():
    model, x = model_and_input("cnn", batch=4)
    batch = torch.export.Dim("batch", min=2, max=64)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: batch},))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert "pln.parallel_ln.default" in targets
    for n in (4, 9):
        _, xn = model_and_input("cnn", batch=n, seed=n)
        with torch.no_grad():
            torch.testing.assert_close(ep.module()(xn), model(xn), atol=1e-5, rtol=1e-5)


def test_export_reports_a_bad_model_with_the_operator_message():
    model = torch.nn.Sequential(torch.nn.Linear(3, 12), pln.ParallelLN(16, 4, dim=2))
    with pytest.raises(Exception, match=r"expected 16 features on axis 1 of the NC input, got 12"):
        torch.export.export(model, (torch.randn(4, 3),))


def test_exported_program_saved_and_loaded_in_a_fresh_process(tmp_path):
    model, x = model_and_input("block", batch=3)
    ep = torch.export.export(model, (x,))
    torch.export.save(ep, tmp_path / "block.pt2")
    with torch.no_grad():
        torch.save({"x": x, "y": model(x)}, tmp_path / "io.pt")
    code = """
        import torch, pln
        ep = torch.export.load("block.pt2")
        io = torch.load("io.pt")
        y = ep.module()(io["x"])
        torch.testing.assert_close(y, io["y"], atol=1e-5, rtol=1e-5)
        print("loaded and ran", tuple(y.shape))
    """
    # The fresh process finds pln as this one did (the package under test).
    result = run_python(code, tmp_path, clean=False,
                        env_extra={"PYTHONPATH": str(Path(pln.__file__).parents[1])})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "loaded and ran (3, 7, 32)" in result.stdout
    # Without pln imported the program cannot run, and says which operator it misses.
    without = run_python('import torch; torch.export.load("block.pt2")', tmp_path)
    assert without.returncode != 0
    assert "pln" in without.stderr


# --------------------------------------------- AOTInductor, run from C++ ---

def test_aot_inductor_package_runs_in_python_and_in_cpp(tmp_path):
    runner = os.environ.get("PLN_RUN_EXPORTED")
    model, x = model_and_input("cnn", batch=3)
    model.eval()
    ep = torch.export.export(model, (x,))
    package = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "cnn.pt2"))
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(torch._inductor.aoti_load_package(package)(x), expected, atol=1e-5, rtol=1e-5)
    if not runner:
        pytest.skip("PLN_RUN_EXPORTED (the C++ runner, examples/run_exported) is not set")
    torch.save([x], tmp_path / "inputs.pt")
    result = subprocess.run([runner, package, str(tmp_path / "inputs.pt"), str(tmp_path / "outputs.pt")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    (y,) = torch.load(tmp_path / "outputs.pt")
    torch.testing.assert_close(y, expected, atol=1e-5, rtol=1e-5)


def test_cpp_runner_reports_a_missing_package(tmp_path):
    runner = os.environ.get("PLN_RUN_EXPORTED")
    if not runner:
        pytest.skip("PLN_RUN_EXPORTED (the C++ runner, examples/run_exported) is not set")
    torch.save([torch.randn(2, 3)], tmp_path / "inputs.pt")
    result = subprocess.run([runner, str(tmp_path / "nowhere.pt2"), str(tmp_path / "inputs.pt"),
                             str(tmp_path / "out.pt")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert "run_exported:" in result.stderr and "nowhere.pt2" in result.stderr


def test_original_module_under_compile_matches_ours():
    """The comparison the benchmark makes: the original module compiled by
    Inductor computes what the fused op computes."""
    torch._dynamo.reset()
    x = torch.randn(8, 16, 5, 5)
    original = torch.compile(OriginalParallelLN(16, 4), fullgraph=True)
    torch.testing.assert_close(pln.ParallelLN(16, 4)(x), original(x), atol=1e-5, rtol=1e-5)
