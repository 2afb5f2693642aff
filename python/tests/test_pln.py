import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pln
from original import OriginalParallelLN
from shared import randomise

SHAPES = {2: (6, 24), 3: (3, 5, 24), 4: (3, 24, 5, 7)}


@pytest.mark.parametrize("dim", [2, 3, 4])
@pytest.mark.parametrize("group", [1, 3, 8, 24])
@pytest.mark.parametrize("centering", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_original_forward_and_gradients(dim, group, centering, affine, dtype):
    torch.manual_seed(1)
    ref = randomise(OriginalParallelLN(24, group, centering=centering, affine=affine, dim=dim)).to(dtype)
    ours = pln.ParallelLN(24, group, centering=centering, affine=affine, dim=dim).to(dtype)
    ours.load_state_dict(ref.state_dict())
    x = (torch.randn(SHAPES[dim], dtype=dtype) * 2 + 0.5).requires_grad_()
    xr = x.detach().clone().requires_grad_()
    y, yr = ours(x), ref(xr)
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(y, yr, atol=tol, rtol=tol)
    dy = torch.randn_like(y)
    y.backward(dy)
    yr.backward(dy)
    torch.testing.assert_close(x.grad, xr.grad, atol=10 * tol, rtol=10 * tol)
    if affine:
        torch.testing.assert_close(ours.weight.grad, ref.weight.grad.reshape(-1), atol=10 * tol, rtol=10 * tol)
        torch.testing.assert_close(ours.bias.grad, ref.bias.grad.reshape(-1), atol=10 * tol, rtol=10 * tol)


@pytest.mark.parametrize("layout,shape,to_nchw", [
    ("nhwc", (2, 4, 3, 16), lambda t: t.permute(0, 3, 1, 2)),
    ("ncl", (2, 16, 7), lambda t: t.unsqueeze(-1)),
])
def test_layout_override(layout, shape, to_nchw):
    torch.manual_seed(2)
    x = torch.randn(shape)
    y = pln.ParallelLN(16, 4, layout=layout, affine=False)(x)
    expected = OriginalParallelLN(16, 4, affine=False, dim=4)(to_nchw(x))
    torch.testing.assert_close(to_nchw(y), expected, atol=1e-5, rtol=1e-5)


def test_channels_last_memory():
    torch.manual_seed(3)
    x = torch.randn(2, 16, 5, 5).contiguous(memory_format=torch.channels_last)
    y = pln.ParallelLN(16, 8)(x)
    torch.testing.assert_close(y, OriginalParallelLN(16, 8)(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dim", [2, 3, 4])
@pytest.mark.parametrize("centering", [True, False])
def test_gradcheck_and_gradgradcheck(dim, centering):
    torch.manual_seed(4)
    shape = {2: (3, 8), 3: (2, 3, 8), 4: (2, 8, 2, 3)}[dim]
    module = randomise(pln.ParallelLN(8, 4, centering=centering, dim=dim)).double()
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)

    def f(x, w, b):
        return torch.ops.pln.parallel_ln(x, w, b, 8, 4, 1e-5, centering, module.layout, 2.0)

    inputs = (x, module.weight, module.bias)
    assert torch.autograd.gradcheck(f, inputs)
    assert torch.autograd.gradgradcheck(f, inputs)


def test_state_dict_from_original_loads_unchanged():
    torch.manual_seed(5)
    original = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), OriginalParallelLN(16, 4),
                                   torch.nn.Flatten(), torch.nn.Linear(16 * 4 * 4, 2))
    ours = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), pln.ParallelLN(16, 4),
                               torch.nn.Flatten(), torch.nn.Linear(16 * 4 * 4, 2))
    x = torch.randn(2, 3, 6, 6)
    randomise(original[1])
    ours.load_state_dict(original.state_dict())
    assert ours[1].weight.shape == (16,)  # [C], as nn.LayerNorm; the load hook reshapes
    torch.testing.assert_close(ours(x), original(x), atol=1e-5, rtol=1e-5)


def test_torch_save_and_load_of_a_model():
    torch.manual_seed(6)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), pln.ParallelLN(16, 4, dim=2),
                                torch.nn.Linear(16, 1))
    randomise(model[1])
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)  # a whole module, not only tensors
    x = torch.randn(5, 4)
    assert torch.equal(loaded(x), model(x))


def test_pls_and_pqnorm():
    torch.manual_seed(7)
    x = torch.randn(4, 12)
    torch.testing.assert_close(pln.PLS(12, 4, dim=2, affine=False)(x),
                               OriginalParallelLN(12, 4, centering=False, affine=False, dim=2)(x))
    torch.testing.assert_close(pln.PQNorm(12, 4, dim=2)(x), pln.ParallelLN(12, 4, dim=2)(x))
    xd = x.double()
    y = pln.PQNorm(12, 4, p=3.0, q=1.5, dim=2, affine=False)(xd)
    xg = xd.reshape(4, 3, 4)
    xc = xg - xg.mean(2, keepdim=True)
    expected = (xc.sign() * xc.abs() ** 2 / ((xc.abs() ** 3).mean(2, keepdim=True) + 1e-5) ** (1 / 1.5))
    torch.testing.assert_close(y, expected.reshape(4, 12))


def test_errors_carry_the_cpp_message():
    norm = pln.ParallelLN(8, 4)
    with pytest.raises(RuntimeError, match=r"expected 8 features on axis 1 of the NCHW input, got 6"):
        norm(torch.randn(2, 6, 3, 3))
    with pytest.raises(RuntimeError, match=r"expects a 4-D input \[N, C, H, W\], got a 2-D input"):
        norm(torch.randn(2, 8))
    with pytest.raises(RuntimeError, match=r"expected a floating-point input, got dtype Long"):
        norm(torch.ones(2, 8, 1, 1, dtype=torch.long))
    with pytest.raises(RuntimeError, match=r"weight must have 8 elements \(num_features\), got 6"):
        torch.ops.pln.parallel_ln(torch.randn(2, 8, 1, 1), torch.ones(6), None, 8, 4)
    with pytest.raises(RuntimeError, match=r"p must be >= 1, got 0.5"):
        pln.ParallelLN(8, 4, p=0.5)(torch.randn(2, 8, 1, 1))
    with pytest.raises(RuntimeError, match=r"eps must be >= 0"):
        pln.ParallelLN(8, 4, eps=-1.0)(torch.randn(2, 8, 1, 1))


def test_construction_errors():
    with pytest.raises(ValueError, match=r"num_features \(10\) must be divisible by num_per_group \(4\)"):
        pln.ParallelLN(10, 4)
    with pytest.raises(ValueError, match=r"dim must be 2"):
        pln.ParallelLN(8, 4, dim=5)
    with pytest.raises(ValueError, match=r"unknown layout 'nwhc'"):
        pln.ParallelLN(8, 4, layout="nwhc")


def test_missing_library_names_how_to_build(tmp_path):
    env = dict(os.environ, PLN_LIBRARY=str(tmp_path / "nowhere.so"))
    package_dir = Path(pln.__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", "import pln"], cwd=tmp_path, env=dict(env, PYTHONPATH=str(package_dir)),
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "cannot find the operator library libpln.so" in result.stderr
    assert "nowhere.so (PLN_LIBRARY)" in result.stderr
    assert "make" in result.stderr


def test_cpu_kernels_names_what_runs_and_a_bad_setting_is_an_error(tmp_path):
    assert pln.cpu_kernels() in {"avx512", "avx2", "neon", "base"}
    package_dir = Path(pln.__file__).resolve().parents[1]

    def with_setting(value):
        env = dict(os.environ, PLN_CPU_CAPABILITY=value, PYTHONPATH=str(package_dir))
        return subprocess.run([sys.executable, "-c", "import pln; print(pln.cpu_kernels())"], cwd=tmp_path, env=env,
                              capture_output=True, text=True)

    portable = with_setting("base")
    assert portable.returncode == 0 and portable.stdout.strip() == "base", portable.stderr[-2000:]
    bad = with_setting("sse9")
    assert bad.returncode != 0
    assert "PLN_CPU_CAPABILITY must be base, avx2, avx512 or neon, got 'sse9'" in bad.stderr, bad.stderr[-2000:]


@pytest.mark.parametrize("make, shape", [
    (lambda: pln.ParallelLN(24, 8, dim=2), (6, 24)),
    (lambda: pln.ParallelLN(24, 8, dim=3), (3, 5, 24)),
    (lambda: pln.ParallelLN(24, 8, dim=4), (3, 24, 5, 7)),
    (lambda: pln.PLS(24, 4, layout="features_last"), (2, 3, 4, 24)),
    (lambda: pln.PQNorm(24, 6, 3, 2, dim=2), (6, 24)),
])
def test_torchscript_matches_eager(make, shape):
    # torch.jit.script compiles the modules' forward (the operators called
    # directly), as C++ programs that load scripted models need.
    torch.manual_seed(2)
    module = randomise(make())
    x = torch.randn(shape)
    scripted = torch.jit.script(module)
    torch.testing.assert_close(scripted(x), module(x))
