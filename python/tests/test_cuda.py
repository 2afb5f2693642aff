"""The fused CUDA kernels against the CPU reference: forward and every
gradient in every layout, dtype (float32, float16, bfloat16, float64) and
group size 1, 2, 4, 8, 16, 32 and C; groups too large for registers, odd
sizes, misaligned and empty inputs; gradcheck and gradgradcheck in float64;
deterministic dweight/dbias; opcheck, torch.compile and autocast on CUDA
tensors; exactness at common offsets up to 1e4 against the CPU kernels; a
run on a non-default stream; a bfloat16 tensor of more than 2^31 elements
(PLN_DEVICE_CHECK_LARGE=1). The GPU tests are skipped, saying why, where no
GPU is visible; the backward op's device checks run without one. The fused
kernels run with PLN_CUDA_KERNELS=1 (scripts/device-check sets it); without
it the same tests check the composite path on CUDA tensors.

CI runs the kernels' arithmetic and indexing on the CPU through HIP-CPU
(tests/cuda/test_kernels_on_cpu.cpp); what only a GPU shows (shuffle masks,
32-lane warps, races, speed) is checked here."""

import os

import pytest
import torch

import pln  # noqa: F401  (registers torch.ops.pln)

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device is visible")

C = 64
LAYOUTS = {"nc": (48, C), "ntc": (4, 9, C), "nchw": (3, C, 5, 7), "nhwc": (3, 5, 7, C), "ncl": (3, C, 11)}
GROUPS = [1, 2, 4, 8, 16, 32, C]
DTYPES = {torch.float32: 2e-5, torch.float64: 1e-10, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def fused_enabled():
    return os.environ.get("PLN_CUDA_KERNELS") == "1"


def inputs(layout, dtype, seed=0, channels_last=False):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(LAYOUTS[layout], generator=gen, dtype=torch.float64) * 2 + 0.5
    w = torch.rand(C, generator=gen, dtype=torch.float64) + 0.5
    b = torch.randn(C, generator=gen, dtype=torch.float64)
    dy = torch.randn(LAYOUTS[layout], generator=gen, dtype=torch.float64)
    if channels_last:
        x, dy = x.contiguous(memory_format=torch.channels_last), dy.contiguous(memory_format=torch.channels_last)
    return x, w, b, dy


def run(x, w, b, dy, g, layout, device, dtype, centering=True):
    x = x.to(device, dtype).requires_grad_()
    w = w.to(device, dtype).requires_grad_()
    b = b.to(device, dtype).requires_grad_()
    y = torch.ops.pln.parallel_ln(x, w, b, w.numel(), g, 1e-5, centering, layout)
    y.backward(dy.to(device, dtype))
    return [t.detach().double().cpu() for t in (y, x.grad, w.grad, b.grad)]


@gpu
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("g", GROUPS)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("centering", [True, False])
def test_matches_the_cpu_reference(layout, g, dtype, centering):
    x, w, b, dy = inputs(layout, dtype)
    # The reference sees the inputs the GPU sees: rounded to dtype (with g = 2
    # a nearly equal pair's output is steep in its values).
    expected = run(*(t.to(dtype).double() for t in (x, w, b, dy)), g, layout, "cpu", torch.float64, centering)
    got = run(x, w, b, dy, g, layout, "cuda", dtype, centering)
    tol = DTYPES[dtype]
    for name, e, a in zip(("y", "dx", "dweight", "dbias"), expected, got):
        scale = max(1.0, e.abs().max().item())
        torch.testing.assert_close(a, e, atol=tol * scale * (8 if name != "y" else 1), rtol=tol * 8, msg=name)


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_channels_last_nchw(dtype):
    x, w, b, dy = inputs("nchw", dtype, channels_last=True)
    expected = run(x, w, b, dy, 8, "nchw", "cpu", torch.float64)
    got = run(x, w, b, dy, 8, "nchw", "cuda", dtype)
    for e, a in zip(expected, got):
        torch.testing.assert_close(a, e, atol=8 * DTYPES[dtype] * max(1.0, e.abs().max().item()), rtol=8 * DTYPES[dtype])


def compare(shape, layout, c, g, dtype=torch.float32, centering=True, tol=2e-4, seed=3):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype).double()
    dy = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype).double()
    w = (torch.rand(c, generator=gen, dtype=torch.float64) + 0.5).to(dtype).double()
    b = torch.randn(c, generator=gen, dtype=torch.float64).to(dtype).double()
    expected = run(x, w, b, dy, g, layout, "cpu", torch.float64, centering)
    got = run(x, w, b, dy, g, layout, "cuda", dtype, centering)
    for name, e, a in zip(("y", "dx", "dweight", "dbias"), expected, got):
        scale = max(1.0, e.abs().max().item())
        torch.testing.assert_close(a, e, atol=tol * scale, rtol=tol, msg=name)


@gpu
@pytest.mark.parametrize("centering", [True, False])
@pytest.mark.parametrize("shape,layout,c,g", [
    ((2, 4096), "nc", 4096, 4096),     # one block per row (forward and backward)
    ((3, 2048), "nc", 2048, 1024),     # the register path at its widest
    ((5, 70), "nc", 70, 35),           # odd groups: scalar loads
    ((4, 3, 70), "ntc", 70, 35),
    ((2, 48, 3, 3), "nchw", 48, 48),   # NCHW groups beyond registers: passes over memory
])
@gpu
def test_large_and_odd_groups(shape, layout, c, g, centering):
    compare(shape, layout, c, g, centering=centering)


@gpu
def test_many_rows_reduce_dweight_over_several_chunks():
    """Enough rows that dweight/dbias sum several chunks' partials, in every layout."""
    compare((40000, 32), "nc", 32, 8, tol=1e-3)
    compare((64, 32, 24, 24), "nchw", 32, 8, tol=1e-3)
    compare((64, 24, 24, 32), "nhwc", 32, 8, tol=1e-3)


@gpu
def test_misaligned_and_empty_inputs():
    gen = torch.Generator().manual_seed(5)
    base = torch.randn(4 * C + 1, generator=gen)
    x = base[1:].view(4, C)  # storage offset of one float: no 16-byte loads
    expected = torch.ops.pln.parallel_ln(x, None, None, C, 8, 1e-5, True, "nc")
    got = torch.ops.pln.parallel_ln(base.cuda()[1:].view(4, C), None, None, C, 8, 1e-5, True, "nc")
    torch.testing.assert_close(got.cpu(), expected, atol=2e-5, rtol=2e-5)
    empty = torch.empty(0, C, device="cuda", requires_grad=True)
    w = torch.ones(C, device="cuda", requires_grad=True)
    y = torch.ops.pln.parallel_ln(empty, w, None, C, 8, 1e-5, True, "nc")
    assert y.shape == (0, C)
    y.sum().backward()
    assert torch.equal(w.grad, torch.zeros(C, device="cuda"))


@gpu
@pytest.mark.parametrize("layout", ["nc", "nchw", "ntc"])
def test_gradcheck_and_gradgradcheck_float64(layout):
    x, w, b, _ = inputs(layout, torch.float64)
    shape = {"nc": (3, C), "nchw": (2, C, 2, 3), "ntc": (2, 3, C)}[layout]
    x = x.reshape(-1)[: torch.Size(shape).numel()].reshape(shape).cuda().requires_grad_()
    w, b = w.cuda().requires_grad_(), b.cuda().requires_grad_()

    def f(x, w, b):
        return torch.ops.pln.parallel_ln(x, w, b, C, 8, 1e-5, True, layout)

    assert torch.autograd.gradcheck(f, (x, w, b))
    assert torch.autograd.gradgradcheck(f, (x, w, b))


@gpu
def test_parameter_gradients_are_deterministic():
    x, w, b, dy = inputs("nc", torch.float32)
    x = torch.randn(8192, C, dtype=torch.float64)
    dy = torch.randn(8192, C, dtype=torch.float64)
    first = run(x, w, b, dy, 8, "nc", "cuda", torch.float32)
    for _ in range(3):
        again = run(x, w, b, dy, 8, "nc", "cuda", torch.float32)
        assert torch.equal(again[2], first[2]) and torch.equal(again[3], first[3])


@gpu
def test_fused_kernels_run_when_enabled():
    """With PLN_CUDA_KERNELS=1 the forward op has a CUDA kernel to run; without
    it, the forward op says how to enable one."""
    x = torch.randn(4, C, device="cuda")
    if fused_enabled():
        y, mean, rstd = torch.ops.pln.parallel_ln_forward(x, None, None, C, 8, layout="nc")
        assert mean.dtype == torch.float32 and mean.numel() == 4 * C // 8
    else:
        with pytest.raises(RuntimeError, match="PLN_CUDA_KERNELS=1 enables them"):
            torch.ops.pln.parallel_ln_forward(x, None, None, C, 8, layout="nc")


@gpu
def test_opcheck_on_cuda():
    from torch.library import opcheck

    x = torch.randn(3, C, 4, 4, device="cuda", requires_grad=True)
    w = torch.rand(C, device="cuda", requires_grad=True)
    b = torch.randn(C, device="cuda", requires_grad=True)
    for args in [(x, w, b, C, 8), (x.half(), w.half(), b.half(), C, 8)]:
        result = opcheck(torch.ops.pln.parallel_ln.default, args)
        assert all(v == "SUCCESS" for v in result.values()), result


@gpu
def test_compiled_model_on_cuda_matches_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, C, 3, padding=1), pln.ParallelLN(C, 8),
                                torch.nn.Conv2d(C, 10, 1)).cuda()
    x = torch.randn(4, 3, 8, 8, device="cuda")
    compiled = torch.compile(model, fullgraph=True)
    torch.testing.assert_close(compiled(x), model(x), atol=1e-4, rtol=1e-4)


@gpu
def test_autocast_bf16_runs_in_the_activation_dtype():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, C, 3, padding=1), pln.ParallelLN(C, 8),
                                torch.nn.Conv2d(C, 10, 1)).cuda()
    x = torch.randn(4, 3, 8, 8, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = model(x)
    assert y.dtype == torch.bfloat16
    y.float().square().sum().backward()
    norm = model[1]
    assert norm.weight.grad.dtype == torch.float32
    torch.testing.assert_close(y.float(), model(x), atol=0.1, rtol=0.05)


@gpu
@pytest.mark.parametrize("layout,shape,g", [("nc", (512, C), 8), ("nc", (64, 192), 96), ("nc", (8, 8192), 4096),
                                            ("nchw", (4, C, 8, 8), 8), ("nchw", (4, 70, 4, 4), 35)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_common_offsets_stay_exact(layout, shape, g, dtype):
    """x = offset + 0.1 randn: the shifted and re-centred kernels keep the
    error of offset 0, within a small multiple of the CPU kernels' error."""
    c = shape[1]
    gen = torch.Generator().manual_seed(7)
    w = torch.rand(c, generator=gen, dtype=torch.float64) + 0.5
    b = torch.randn(c, generator=gen, dtype=torch.float64)
    dy = torch.randn(shape, generator=gen, dtype=torch.float64)
    noise = torch.randn(shape, generator=gen, dtype=torch.float64) * 0.1
    floor = 4e-6 if dtype == torch.float32 else 1e-13
    for offset in [0.0, 1e2, 1e3, 1e4]:
        x = (offset + noise).to(dtype).double()
        args = (w.to(dtype).double(), b.to(dtype).double(), dy.to(dtype).double())
        ref = run(x, *args, g, layout, "cpu", torch.float64)

        def error(got):
            return [((a - e).abs().max() / e.abs().max()).item() for a, e in zip(got, ref)]

        cpu = error(run(x, *args, g, layout, "cpu", dtype))
        cuda = error(run(x, *args, g, layout, "cuda", dtype))
        for name, e_cuda, e_cpu in zip(("y", "dx", "dweight", "dbias"), cuda, cpu):
            assert e_cuda <= max(4 * e_cpu, floor), f"{name} at offset {offset}: {e_cuda:.2e} (CPU {e_cpu:.2e})"


@gpu
def test_non_default_stream():
    """The kernels run on the current stream, not the default one."""
    x, w, b, dy = inputs("nchw", torch.float32)
    expected = run(x, w, b, dy, 8, "nchw", "cuda", torch.float32)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        got = run(x, w, b, dy, 8, "nchw", "cuda", torch.float32)
    stream.synchronize()
    for e, a in zip(expected, got):
        assert torch.equal(a, e)


@gpu
@pytest.mark.skipif(os.environ.get("PLN_DEVICE_CHECK_LARGE") != "1",
                    reason="a 2^31-element tensor: PLN_DEVICE_CHECK_LARGE=1 (scripts/device-check)")
def test_more_than_2_31_elements_bfloat16():
    """[2^26, 40] bfloat16, g = 8: 2.7e9 elements, past any 32-bit index."""
    rows, c, g = 1 << 26, 40, 8
    torch.manual_seed(0)
    x = torch.randn(rows, c, device="cuda", dtype=torch.bfloat16).requires_grad_()
    w = (torch.rand(c, device="cuda") + 0.5).to(torch.bfloat16).requires_grad_()
    b = torch.randn(c, device="cuda", dtype=torch.bfloat16).requires_grad_()
    y = torch.ops.pln.parallel_ln(x, w, b, c, g, 1e-5, True, "nc")
    dy = torch.ones_like(y)
    y.backward(dy)
    # Rows at the start, the middle and past 2^31 elements, against the CPU reference.
    for first in (0, rows // 2, rows - 1024):
        sl = slice(first, first + 1024)
        xs = x.detach()[sl].double().cpu().requires_grad_()
        ys = torch.ops.pln.parallel_ln(xs, w.detach().double().cpu(), b.detach().double().cpu(), c, g, 1e-5, True, "nc")
        ys.backward(dy[sl].double().cpu())
        torch.testing.assert_close(y.detach()[sl].double().cpu(), ys.detach(), atol=3e-2, rtol=3e-2)
        torch.testing.assert_close(x.grad[sl].double().cpu(), xs.grad, atol=3e-2, rtol=3e-2)
    # dbias = sum of dy = rows; dweight = sum of xhat, about 0 against rows.
    torch.testing.assert_close(b.grad.double().cpu(), torch.full((c,), float(rows), dtype=torch.float64), rtol=1e-2, atol=0)
    assert w.grad.double().abs().max().item() < 1e-2 * rows


def test_backward_checks_devices():
    """grad_output, mean and rstd on another device than the input: a clear
    error, not a raw pointer to another device's memory. Without a GPU, the
    other device is the meta device (the dispatcher then runs the Meta kernel,
    which makes the same checks)."""
    other = "cuda" if torch.cuda.is_available() else "meta"
    x = torch.randn(4, C, device=other if other == "cuda" else "cpu")
    stats = torch.zeros(4 * C // 8, device=x.device)
    dy = torch.randn(4, C, device=x.device)
    elsewhere = "cpu" if other == "cuda" else "meta"
    for position, name in [(0, "grad_output"), (2, "mean"), (3, "rstd")]:
        args = [dy, x, stats, stats]
        args[position] = args[position].to(elsewhere)
        with pytest.raises(RuntimeError, match=f"{name} is on {elsewhere}.* but the input is on {x.device.type}"):
            torch.ops.pln.parallel_ln_backward(*args, None, C, 8, 1e-5, True, "nc")
    weight = torch.ones(C, device=elsewhere)
    with pytest.raises(RuntimeError, match=f"weight is on {elsewhere}.* but the input is on {x.device.type}"):
        torch.ops.pln.parallel_ln_backward(dy, x, stats, stats, weight, C, 8, 1e-5, True, "nc")


def run_gated(x, z, w, dy, g, device, dtype, position, activation, centering):
    x, z, w = (t.to(device, dtype).requires_grad_() for t in (x, z, w))
    y = torch.ops.pln.gated_norm(x, z, w, None, w.numel(), g, 1e-5, centering, position, activation)
    y.backward(dy.to(device, dtype))
    return [t.detach().double().cpu() for t in (y, x.grad, z.grad, w.grad)]


@gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("position, activation, centering",
                         [("before", "silu", False), ("after", "silu", False), ("before", "sigmoid", True)])
@pytest.mark.parametrize("width, g", [(1280, 640), (256, 128), (300, 100)])
def test_gated_norm_matches_the_cpu_reference(dtype, position, activation, centering, width, g):
    """The gated norm on the GPU (fused with PLN_CUDA_KERNELS=1, composite
    otherwise) against the CPU's float64 kernels on the same rounded inputs."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(6, 5, width, generator=gen, dtype=torch.float64) + 0.5
    z = torch.randn(6, 5, width, generator=gen, dtype=torch.float64) * 2
    w = torch.rand(width, generator=gen, dtype=torch.float64) + 0.5
    dy = torch.randn(6, 5, width, generator=gen, dtype=torch.float64)
    expected = run_gated(*(t.to(dtype).double() for t in (x, z, w, dy)), g, "cpu", torch.float64, position,
                         activation, centering)
    got = run_gated(x, z, w, dy, g, "cuda", dtype, position, activation, centering)
    tol = DTYPES[dtype]
    for name, e, a in zip(("y", "dx", "dz", "dweight"), expected, got):
        scale = max(1.0, e.abs().max().item())
        torch.testing.assert_close(a, e, atol=tol * scale * (8 if name != "y" else 1), rtol=tol * 8, msg=name)
