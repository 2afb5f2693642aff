"""The operators' registrations under PyTorch 2.x: torch.library.opcheck of
every op (schema, autograd registration, fake tensors, AOT dispatch) and
autocast."""

import pytest
import torch

import pln  # noqa: F401  (registers torch.ops.pln)
from shared import needs_torch2

pytestmark = needs_torch2

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


@pytest.mark.parametrize("dtype,weight_dtype", [(torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32),
                                                (torch.float64, torch.float32)])
def test_backward_op_gives_parameter_gradients_in_the_weights_dtype_on_every_route(dtype, weight_dtype):
    """grad_weight and grad_bias take the weight's dtype, as the fake kernel
    says, whether the fused backward runs (nothing records the call) or the
    gradient's formulation (autograd records it, for a double backward)."""
    torch.manual_seed(0)
    x = torch.randn(6, C, dtype=dtype)
    w = torch.randn(C, dtype=weight_dtype)
    _, mean, rstd = torch.ops.pln.parallel_ln_forward(x, w, None, C, 4, layout="nc")
    dy = torch.randn_like(x)
    fused = torch.ops.pln.parallel_ln_backward(dy, x, mean, rstd, w, C, 4, layout="nc")
    recorded = torch.ops.pln.parallel_ln_backward(dy, x.clone().requires_grad_(), mean, rstd, w, C, 4, layout="nc")
    assert recorded[0].grad_fn is not None
    for dx, dw, db in (fused, recorded):
        assert (dx.dtype, dw.dtype, db.dtype) == (dtype, weight_dtype, weight_dtype)
    for a, b in zip(fused, recorded):
        torch.testing.assert_close(a, b.detach(), atol=2e-2, rtol=2e-2)


def test_composite_routes_give_the_strides_the_fake_kernels_promise():
    """Where autograd records the composite formulation (PQNorm beyond p = 2,
    the backward op's gradient for a double backward), the outputs have the
    fused kernels' strides, which the fake kernels promise, for permuted,
    contiguous and channels-last inputs."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    cases = [(torch.randn(5, 3, C).transpose(0, 1), "ntc"), (torch.randn(2, C, 3, 5), "nchw"),
             (torch.randn(2, C, 3, 5).contiguous(memory_format=torch.channels_last), "nchw"),
             (torch.randn(2, 5, C, 3).transpose(2, 3), "nhwc")]
    for x, layout in cases:
        _, mean, rstd = torch.ops.pln.parallel_ln_forward(x, None, None, C, 4, layout=layout)
        calls = [lambda t: torch.ops.pln.pq_norm(t, None, None, C, 4, 3.0, 1.5, layout=layout),
                 lambda t: torch.ops.pln.parallel_ln_backward(t, t, mean, rstd, None, C, 4, layout=layout)[0]]
        for call in calls:
            y = call(x.detach().requires_grad_())
            assert y.grad_fn is not None
            with FakeTensorMode(allow_non_fake_inputs=True) as mode:
                expected = call(mode.from_tensor(x))
            assert y.stride() == expected.stride(), (layout, x.stride())


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
