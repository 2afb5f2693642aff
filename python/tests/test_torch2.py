"""The operators under PyTorch 2.x: opcheck, torch.compile, torch.export,
AOTInductor, and the installed package (pip install --no-build-isolation .)."""

import os
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
import torch

import pln
from original import OriginalParallelLN

TORCH = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
pytestmark = pytest.mark.skipif(TORCH < (2, 6), reason=f"needs PyTorch 2.6 or later, this is {torch.__version__}")

REPO = Path(__file__).resolve().parents[2]
C = 16
SHAPES = {"nc": (6, C), "ntc": (3, 5, C), "nchw": (3, C, 4, 5), "nhwc": (3, 4, 5, C), "ncl": (3, C, 7)}


def make_input(layout, dtype, requires_grad, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(SHAPES[layout], generator=gen, dtype=dtype) * 2 + 0.5
    return x.requires_grad_(requires_grad)


def affine(dtype, requires_grad, seed=1):
    gen = torch.Generator().manual_seed(seed)
    w = (torch.rand(C, generator=gen, dtype=dtype) + 0.5).requires_grad_(requires_grad)
    b = torch.randn(C, generator=gen, dtype=dtype).requires_grad_(requires_grad)
    return w, b


def opcheck(op, args, kwargs=None):
    from torch.library import opcheck as check

    results = check(op, args, kwargs or {})
    assert set(results) == {"test_schema", "test_autograd_registration", "test_faketensor",
                            "test_aot_dispatch_dynamic"}
    assert all(v == "SUCCESS" for v in results.values()), results


# ------------------------------------------------------------------ opcheck ---

@pytest.mark.parametrize("layout", list(SHAPES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck_parallel_ln(layout, dtype, requires_grad):
    x = make_input(layout, dtype, requires_grad)
    w, b = affine(dtype, requires_grad)
    opcheck(torch.ops.pln.parallel_ln.default, (x, w, b, C, 4), {"layout": layout})
    opcheck(torch.ops.pln.parallel_ln.default, (x, None, None, C, 8, 1e-5, False, layout))


@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck_parallel_ln_channels_last_and_generic_p(requires_grad):
    x = make_input("nchw", torch.float32, False).contiguous(memory_format=torch.channels_last)
    x.requires_grad_(requires_grad)
    w, b = affine(torch.float32, requires_grad)
    opcheck(torch.ops.pln.parallel_ln.default, (x, w, b, C, 4))
    opcheck(torch.ops.pln.parallel_ln.default, (x, w, b, C, 4, 1e-5, True, "nchw", 3.0))


@pytest.mark.parametrize("layout", ["nc", "nchw", "nhwc"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck_pq_norm(layout, dtype, requires_grad):
    x = make_input(layout, dtype, requires_grad)
    w, b = affine(dtype, requires_grad)
    opcheck(torch.ops.pln.pq_norm.default, (x, w, b, C, 4, 3.0, 1.5), {"layout": layout})
    opcheck(torch.ops.pln.pq_norm.default, (x, w, b, C, 4, 2.0, 2.0), {"layout": layout})


@pytest.mark.parametrize("layout", list(SHAPES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck_forward_and_backward_ops(layout, dtype, requires_grad):
    x = make_input(layout, dtype, requires_grad)
    w, b = affine(dtype, requires_grad)
    opcheck(torch.ops.pln.parallel_ln_forward.default, (x, w, b, C, 4), {"layout": layout})
    _, mean, rstd = torch.ops.pln.parallel_ln_forward(x.detach(), w.detach(), b.detach(), C, 4, layout=layout)
    dy = make_input(layout, dtype, requires_grad, seed=2)
    opcheck(torch.ops.pln.parallel_ln_backward.default, (dy, x, mean, rstd, w, C, 4), {"layout": layout})


def test_statistics_are_shaped_like_the_input_with_groups_for_features():
    """[N, T, groups], [N, groups, H, W] (channels-last strides for a
    channels-last input), [N, H, W, groups]: the kernels' memory order, and a
    shape a sharding of the input describes."""
    cases = [((2, 3, 16), "ntc", (2, 3, 4)), ((2, 16, 3, 5), "nchw", (2, 4, 3, 5)),
             ((2, 3, 5, 16), "nhwc", (2, 3, 5, 4)), ((2, 16, 7), "ncl", (2, 4, 7))]
    for shape, layout, stats in cases:
        x = torch.randn(shape, dtype=torch.float64)
        for local in (16, -1):
            y, mean, rstd = torch.ops.pln.parallel_ln_forward(x, None, None, local, 4, layout=layout)
            assert mean.shape == rstd.shape == stats, (layout, mean.shape)
            axis = {"ntc": 2, "nchw": 1, "nhwc": 3, "ncl": 1}[layout]
            g = x.movedim(axis, -1).unflatten(-1, (4, 4))
            torch.testing.assert_close(mean, g.mean(-1).movedim(-1, axis))
    x = torch.randn(2, 16, 3, 5).contiguous(memory_format=torch.channels_last)
    _, mean, rstd = torch.ops.pln.parallel_ln_forward(x, None, None, -1, 4, layout="nchw")
    assert mean.is_contiguous(memory_format=torch.channels_last)
    dx, _, _ = torch.ops.pln.parallel_ln_backward(x, x, mean, rstd, None, 16, 4, layout="nchw")
    dref, _, _ = torch.ops.pln.parallel_ln_backward(x.contiguous(), x.contiguous(), mean.contiguous(),
                                                    rstd.contiguous(), None, 16, 4, layout="nchw")
    torch.testing.assert_close(dx, dref)


def test_feature_count_from_the_input():
    """num_features <= 0: the input's width (a shard's), which must hold whole groups."""
    x = torch.randn(3, 8)
    for op in (lambda t, n: torch.ops.pln.parallel_ln(t, None, None, n, 4, layout="nc"),
               lambda t, n: torch.ops.pln.pq_norm(t, None, None, n, 4, 3.0, 1.5, layout="nc"),
               lambda t, n: torch.ops.pln.parallel_ln_forward(t, None, None, n, 4, layout="nc")[0]):
        torch.testing.assert_close(op(x, -1), op(x, 8))
        torch.testing.assert_close(op(x, 0), op(x, 8))
        with pytest.raises(RuntimeError, match=r"the input's width, 6 features on axis 1 .* groups of num_per_group = 4"):
            op(torch.randn(3, 6), -1)
        with pytest.raises(RuntimeError, match=r"expected 12 features on axis 1 of the NC input, got 8"):
            op(x, 12)
    with torch.device("meta"):
        _, mean, _ = torch.ops.pln.parallel_ln_forward(torch.empty(3, 8), None, None, -1, 4, layout="nc")
    assert mean.shape == (3, 2)
    w = torch.randn(8, requires_grad=True)
    xr = x.clone().requires_grad_()
    torch.ops.pln.parallel_ln(xr, w, None, -1, 4, layout="nc").square().sum().backward()
    xr2, w2 = x.clone().requires_grad_(), w.detach().clone().requires_grad_()
    torch.ops.pln.parallel_ln(xr2, w2, None, 8, 4, layout="nc").square().sum().backward()
    torch.testing.assert_close(xr.grad, xr2.grad)
    torch.testing.assert_close(w.grad, w2.grad)


def test_backward_op_rejects_statistics_of_another_input():
    x = make_input("nc", torch.float32, False)
    _, mean, rstd = torch.ops.pln.parallel_ln_forward(x, None, None, C, 4, layout="nc")
    assert mean.shape == rstd.shape == (6, 4)  # [rows, groups]
    with pytest.raises(RuntimeError, match=r"expected the forward's statistics, Float of shape \[6, 4\], got shape \[3, 4\]"):
        torch.ops.pln.parallel_ln_backward(x, x, mean[:3], rstd, None, C, 4, layout="nc")
    with pytest.raises(RuntimeError, match=r"got shape \[24\]"):
        torch.ops.pln.parallel_ln_backward(x, x, mean.reshape(-1), rstd, None, C, 4, layout="nc")
    with pytest.raises(RuntimeError, match=r"grad_output has shape \[6, 8\] but the input has shape \[6, 16\]"):
        torch.ops.pln.parallel_ln_backward(x[:, :8], x, mean, rstd, None, C, 4, layout="nc")


# ----------------------------------------------------------------- autocast ---

@pytest.mark.parametrize("op", ["parallel_ln", "pq_norm"])
def test_autocast_parameters_follow_the_activation_dtype(op):
    # Under autocast a Linear gives bfloat16; the float32 affine parameters are
    # cast to it, the output is bfloat16, and their gradients come back float32.
    torch.manual_seed(0)
    linear = torch.nn.Linear(8, C)
    w, b = affine(torch.float32, True)
    x = torch.randn(5, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = linear(x)
        assert h.dtype == torch.bfloat16
        y = getattr(torch.ops.pln, op)(h, w, b, C, 4, layout="nc")
    assert y.dtype == torch.bfloat16
    y.float().square().sum().backward()
    assert w.grad.dtype == torch.float32 and b.grad.dtype == torch.float32
    reference = getattr(torch.ops.pln, op)(h.detach().float(), w.detach(), b.detach(), C, 4, layout="nc")
    torch.testing.assert_close(y.float(), reference, atol=0.05, rtol=0.05)


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


def run_python(code, cwd, env_extra=None, clean=True):
    """Runs `code` in a fresh interpreter; clean: without PLN_LIBRARY and PYTHONPATH."""
    env = dict(os.environ)
    if clean:
        env.pop("PLN_LIBRARY", None)
        env.pop("PYTHONPATH", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


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


# ------------------------------------------------- the installed package ---

def installed_or_skip(tmp_path):
    probe = run_python("import pln; print(pln.__file__)", tmp_path)
    if probe.returncode != 0:
        if os.environ.get("PLN_REQUIRE_INSTALLED"):
            pytest.fail("pln is not installed in this interpreter: " + probe.stderr[-2000:])
        pytest.skip("pln is not installed in this interpreter (pip install --no-build-isolation .)")
    return Path(probe.stdout.strip())


def test_installed_package_from_outside_the_repository(tmp_path):
    init = installed_or_skip(tmp_path)
    assert init.parent != REPO / "python" / "pln", init
    code = """
        import torch, pln
        from torch.library import opcheck
        assert pln.library_path.parent == __import__("pathlib").Path(pln.__file__).parent, pln.library_path
        x = torch.randn(4, 16, 3, 3, requires_grad=True)
        w = torch.rand(16, requires_grad=True); b = torch.randn(16, requires_grad=True)
        result = opcheck(torch.ops.pln.parallel_ln.default, (x, w, b, 16, 4))
        assert all(v == "SUCCESS" for v in result.values()), result
        model = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 1), pln.ParallelLN(16, 4))
        compiled = torch.compile(model, fullgraph=True)
        torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-5)
        ep = torch.export.export(model, (x.detach(),))
        torch.testing.assert_close(ep.module()(x.detach()), model(x.detach()), atol=1e-5, rtol=1e-5)
        print("installed:", pln.library_path)
    """
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "installed:" in result.stdout


def wheelhouse_or_skip():
    """scikit-build-core's wheels, which scripts/venv keeps in .venv/wheelhouse so
    that pip's isolated build environment installs without the network."""
    wheelhouse = Path(sys.prefix) / "wheelhouse"
    if not any(wheelhouse.glob("scikit_build_core-*.whl")):
        if os.environ.get("PLN_REQUIRE_INSTALLED"):
            pytest.fail(f"no scikit-build-core wheel in {wheelhouse} (scripts/venv downloads it)")
        pytest.skip(f"no scikit-build-core wheel in {wheelhouse} (scripts/venv downloads it)")
    return wheelhouse


def fresh_environment(path):
    """A new virtual environment: no pip, no torch."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def see_this_torch(python):
    """A .pth file puts this interpreter's site-packages (its torch) after the environment's own."""
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "torch-of-the-test.pth").write_text(str(Path(torch.__file__).parents[1]) + "\n")


def pip(*args, cwd, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PLN_LIBRARY")}
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_pip_install_without_torch_stops_within_seconds_saying_what_to_type(tmp_path):
    """`pip install <path>` without flags, in an environment without torch: the
    backend stops before building (no torch of PyPI's newest fetched to build
    against), saying what to install first."""
    wheelhouse = wheelhouse_or_skip()
    python = fresh_environment(tmp_path / "env")
    start = time.monotonic()
    result = pip("--python", str(python), "install", "--no-index", "--find-links", str(wheelhouse), str(REPO),
                 cwd=tmp_path)
    seconds = time.monotonic() - start
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "pln: no torch in this environment" in output, output[-3000:]
    assert f"{python} -m pip install torch" in output and "Nothing was built" in output
    assert seconds < 60, seconds


def test_pip_wheel_with_build_isolation_builds_against_this_torch_and_installs_elsewhere(tmp_path):
    """`pip wheel <path>` without --no-build-isolation builds against the
    environment's torch (seen through pip's isolation), and the wheel installs
    into another environment with the same torch."""
    installed_or_skip(tmp_path)
    wheelhouse = wheelhouse_or_skip()
    # Its own build directory: scikit-build-core clears one that another
    # (isolated) environment configured, and build-pip/ serves `make venv`.
    # The CUDA kernels are left out to save nvcc's minutes; the build is
    # otherwise the one `pip install` makes.
    result = pip("wheel", "--no-deps", "--no-index", "--find-links", str(wheelhouse), "-w", str(tmp_path / "dist"),
                 f"--config-settings=build-dir={tmp_path / 'build'}", "--config-settings=cmake.define.PLN_CUDA=OFF",
                 str(REPO), cwd=tmp_path)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    (wheel,) = (tmp_path / "dist").glob("pln-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "pln/py.typed" in names and "pln/functional.py" in names
        library = archive.read("pln/libpln.so")
    assert b"pln:libtorch=" + torch.__version__.split("+")[0].encode() in library
    python = fresh_environment(tmp_path / "other")
    result = pip("--python", str(python), "install", "--no-deps", "--no-index", str(wheel), cwd=tmp_path, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    see_this_torch(python)  # after the install, which would otherwise find this pln installed already
    code = textwrap.dedent("""
        import torch, pln
        print(pln.__file__)
        x = torch.randn(3, 5, 16)
        y = pln.functional.parallel_ln(x, 16)
        torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (16,)), atol=1e-5, rtol=1e-5)
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PLN_LIBRARY")}
    run = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith(str(tmp_path / "other")), run.stdout


# ------------------------------------------------------ the Python front end ---

def test_library_without_the_operators_is_an_import_error_naming_it(tmp_path):
    other = Path(torch.__file__).parent / "lib" / "libc10.so"
    result = run_python("import pln", tmp_path, clean=False,
                        env_extra={"PLN_LIBRARY": str(other),
                                   "PYTHONPATH": str(Path(pln.__file__).parents[1])})
    assert result.returncode != 0
    assert "ImportError" in result.stderr
    assert f"{other} (PLN_LIBRARY) loaded, but it does not register the torch.ops.pln operators" in result.stderr


def test_library_of_another_libtorch_is_an_import_error_before_loading(tmp_path):
    # A copy of the library whose marker names LibTorch 1.13: loading it could
    # abort the process, so the package must refuse it from the file alone.
    data = Path(pln.library_path).read_bytes()
    marker = b"pln:libtorch=" + torch.__version__.split("+")[0].encode()
    assert marker in data
    other = marker[: len(b"pln:libtorch=")] + b"1.13.0".ljust(len(marker) - len(b"pln:libtorch="), b"\0")
    (tmp_path / "libpln.so").write_bytes(data.replace(marker, other))
    env = dict(os.environ, PLN_LIBRARY=str(tmp_path / "libpln.so"), PYTHONPATH=str(REPO / "python"))
    result = subprocess.run([sys.executable, "-c", "import pln"], env=env, capture_output=True, text=True)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "was built against LibTorch 1.13.0, but this interpreter has torch" in result.stderr, result.stderr


def test_unloadable_library_is_an_import_error_naming_it(tmp_path):
    bad = tmp_path / "libpln.so"
    bad.write_bytes(b"not an ELF file")
    result = run_python("import pln", tmp_path, clean=False,
                        env_extra={"PLN_LIBRARY": str(bad), "PYTHONPATH": str(Path(pln.__file__).parents[1])})
    assert result.returncode != 0
    assert f"ImportError: pln: cannot load {bad} (PLN_LIBRARY)" in result.stderr


@pytest.mark.parametrize("cls,kwargs", [
    (pln.ParallelLN, {"centring": False}),
    (pln.PLS, {"centering": True}),
    (pln.PQNorm, {"r": 3.0}),
])
def test_unknown_keyword_arguments_raise_type_error(cls, kwargs):
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        cls(16, 4, **kwargs)


def test_original_module_under_compile_matches_ours():
    """The comparison the benchmark makes: the original module compiled by
    Inductor computes what the fused op computes."""
    torch._dynamo.reset()
    x = torch.randn(8, 16, 5, 5)
    original = torch.compile(OriginalParallelLN(16, 4), fullgraph=True)
    torch.testing.assert_close(pln.ParallelLN(16, 4)(x), original(x), atol=1e-5, rtol=1e-5)
