"""torch.func (vmap, grad, jacrev, jacfwd, hessian, jvp) through pln.functional
and the modules, forward-mode AD, and derivatives up to the third order."""

import pytest
import torch
from torch.autograd import gradcheck, gradgradcheck

import pln
import pln.functional as PF
from shared import needs_torch

needs_func = needs_torch(2, 0, "torch.func needs")
C, G = 8, 4


def reference(x, weight=None, bias=None, g=G, eps=1e-5, centering=True, p=2.0, q=None):
    """The formula in composite ATen operations, written independently of the package."""
    shape = x.shape
    xg = x.reshape(*shape[:-1], shape[-1] // g, g)
    xc = xg - xg.mean(-1, keepdim=True) if centering else xg
    stat = (xc * xc).mean(-1, keepdim=True) if p == 2 else (xc.abs() ** p).mean(-1, keepdim=True)
    y = (xc / (stat + eps) ** (1 / p) if q is None else
         xc.sign() * xc.abs() ** (p / q) / (stat + eps) ** (1 / q)).reshape(shape)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def data(*shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=gen, dtype=torch.float64) * 2 + 0.5
    w = torch.rand(shape[-1], generator=gen, dtype=torch.float64) + 0.5
    b = torch.randn(shape[-1], generator=gen, dtype=torch.float64)
    return x, w, b


VARIANTS = {
    "pln": (lambda x, w, b: PF.parallel_ln(x, G, w, b), lambda x, w, b: reference(x, w, b)),
    "pls": (lambda x, w, b: PF.pls(x, G, w, b), lambda x, w, b: reference(x, w, b, centering=False)),
    "p3": (lambda x, w, b: PF.parallel_ln(x, G, w, b, p=3.0), lambda x, w, b: reference(x, w, b, p=3.0)),
    "pq": (lambda x, w, b: PF.pq_norm(x, G, w, b, p=3.0, q=1.5),
           lambda x, w, b: reference(x, w, b, p=3.0, q=1.5)),
}


@needs_func
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_vmap(variant):
    ours, ref = VARIANTS[variant]
    x, w, b = data(5, 3, C)
    got = torch.func.vmap(ours, in_dims=(0, None, None))(x, w, b)
    torch.testing.assert_close(got, ref(x, w, b))
    ws = torch.rand(5, C, dtype=torch.float64) + 0.5  # a weight per sample as well
    got = torch.func.vmap(ours, in_dims=(0, 0, None))(x, ws, b)
    torch.testing.assert_close(got, ref(x, ws[:, None, :], b))


@needs_func
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_grad_jacrev_jacfwd_hessian_jvp(variant):
    ours, ref = VARIANTS[variant]
    x, w, b = data(2, C)
    v = torch.randn(2, C, dtype=torch.float64)

    def scalar(fn):
        return lambda x, w: (fn(x, w, b) ** 2 * v).sum()

    for transform in (torch.func.grad, lambda f: torch.func.grad(f, argnums=(0, 1))):
        got, want = transform(scalar(ours))(x, w), transform(scalar(ref))(x, w)
        torch.testing.assert_close(got, want)
    for transform in (torch.func.jacrev, torch.func.jacfwd):
        torch.testing.assert_close(transform(ours)(x, w, b), transform(ref)(x, w, b))
    torch.testing.assert_close(torch.func.hessian(scalar(ours))(x, w), torch.func.hessian(scalar(ref))(x, w))
    t = torch.randn_like(x)
    got = torch.func.jvp(lambda x: ours(x, w, b), (x,), (t,))
    want = torch.func.jvp(lambda x: ref(x, w, b), (x,), (t,))
    torch.testing.assert_close(got, want)
    # and jvp against finite differences, independent of any AD
    h = 1e-6
    fd = (ref(x + h * t, w, b) - ref(x - h * t, w, b)) / (2 * h)
    torch.testing.assert_close(got[1], fd, atol=1e-6, rtol=1e-6)


@needs_func
def test_modules_under_torch_func_and_forward_ad():
    x, _, _ = data(3, 2, C)
    norm = pln.ParallelLN(C, G, dim=3, dtype=torch.float64)
    pq = pln.PQNorm(C, G, p=3.0, q=1.5, dim=3, dtype=torch.float64)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.normal_()
    params = dict(norm.named_parameters())
    jac = torch.func.jacfwd(lambda x: torch.func.functional_call(norm, params, (x,)))(x)
    want = torch.func.jacfwd(lambda x: reference(x, norm.weight.detach(), norm.bias.detach()))(x)
    torch.testing.assert_close(jac, want)
    import torch.autograd.forward_ad as fwAD
    t = torch.randn_like(x)
    with fwAD.dual_level():
        out = fwAD.unpack_dual(pq(fwAD.make_dual(x, t)))
    want = torch.func.jvp(lambda x: reference(x, p=3.0, q=1.5), (x,), (t,))
    torch.testing.assert_close((out.primal, out.tangent), want)


@needs_func
def test_pinn_second_derivatives_of_a_pln_net():
    """A PLN-Net u(x) and its Laplacian, as a PINN differentiates it: jacfwd of
    jacrev through the module, against the same net written with the reference."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 16), pln.ParallelLN(16, 4, dim=2), torch.nn.Linear(16, 16),
                              pln.PLS(16, 8, dim=2), torch.nn.Linear(16, 1)).double()

    def ref_net(x):
        h = reference(net[0](x), net[1].weight, net[1].bias, g=4)
        h = reference(net[2](h), net[3].weight, net[3].bias, g=8, centering=False)
        return net[4](h)

    pts = torch.rand(5, 2, dtype=torch.float64)
    for fn in (torch.func.jacfwd(torch.func.jacrev(lambda p: net(p).squeeze())),
               torch.func.hessian(lambda p: net(p).squeeze())):
        got = torch.func.vmap(fn)(pts)
        want = torch.func.vmap(torch.func.hessian(lambda p: ref_net(p).squeeze()))(pts)
        torch.testing.assert_close(got, want)


# ------------------------------------------------------- higher derivatives ---

def third_order(fn, v):
    """The function whose Jacobian of Jacobian gradgradcheck checks: the first
    derivative, so gradgradcheck covers the second and third derivatives."""
    def first(x, w, b):
        return torch.autograd.grad(fn(x, w, b), (x, w, b), v, create_graph=True)
    return first


@pytest.mark.parametrize("layout,shape", [("nc", (3, C)), ("nchw", (2, C, 2, 1)), ("ntc", (2, 2, C))])
@pytest.mark.parametrize("centering", [True, False])
def test_third_order_gradcheck_of_the_fused_operator(layout, shape, centering):
    gen = torch.Generator().manual_seed(1)
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) * 2 + 0.5).requires_grad_()
    w = (torch.rand(C, generator=gen, dtype=torch.float64) + 0.5).requires_grad_()
    b = torch.randn(C, generator=gen, dtype=torch.float64, requires_grad=True)
    v = torch.randn(shape, generator=gen, dtype=torch.float64)

    def fn(x, w, b):
        return torch.ops.pln.parallel_ln(x, w, b, C, G, 1e-5, centering, layout, 2.0)

    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))
    assert gradgradcheck(third_order(fn, v), (x, w, b))


def test_third_order_gradcheck_of_pq_norm_and_p3():
    x, w, b = (t.requires_grad_() for t in data(2, C))
    v = torch.randn(2, C, dtype=torch.float64)
    for fn in (lambda x, w, b: torch.ops.pln.pq_norm(x, w, b, C, G, 3.0, 1.5, 1e-5, True, "nc"),
               lambda x, w, b: torch.ops.pln.parallel_ln(x, w, b, C, G, 1e-5, True, "nc", 3.0)):
        assert gradgradcheck(third_order(fn, v), (x, w, b))


@pytest.mark.xfail(reason="ATen's layer_norm: its double backward treats the saved mean and rstd as "
                          "constants, so its third derivative is wrong (finding recorded in docs/python.md)",
                   strict=False)
def test_third_order_gradcheck_of_atens_layer_norm():
    x, w, b = (t.requires_grad_() for t in data(3, C))
    v = torch.randn(3, C, dtype=torch.float64)

    def fn(x, w, b):
        return torch.nn.functional.layer_norm(x.reshape(3, C // G, G), (G,), None, None, 1e-5).reshape(3, C) * w + b

    assert gradgradcheck(third_order(fn, v), (x, w, b), raise_exception=False)


@needs_func
def test_forward_mode_ad_through_the_operators_themselves():
    """torch.ops.pln.* called directly under jvp / jacfwd / dual tensors: the
    operators' autograd kernel runs the composite formulas, which carry the
    tangent (the fused function has no forward formula and would drop it)."""
    x, w, b = data(3, C)
    t = torch.randn_like(x)
    op = lambda x: torch.ops.pln.parallel_ln(x, w, b, C, G, 1e-5, True, "nc", 2.0)
    pq = lambda x: torch.ops.pln.pq_norm(x, w, b, C, G, 3.0, 1.5, 1e-5, True, "nc")
    torch.testing.assert_close(torch.func.jvp(op, (x,), (t,)),
                               torch.func.jvp(lambda x: reference(x, w, b), (x,), (t,)))
    torch.testing.assert_close(torch.func.jacfwd(pq)(x), torch.func.jacfwd(lambda x: reference(x, w, b, p=3.0, q=1.5))(x))
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        out = fwAD.unpack_dual(op(fwAD.make_dual(x, t)))
    assert out.tangent is not None
    torch.testing.assert_close(out.tangent, torch.func.jvp(lambda x: reference(x, w, b), (x,), (t,))[1])
