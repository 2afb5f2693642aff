"""PyTorch's own samples of layer_norm and rms_norm (their OpInfo entries in
torch.testing._internal.common_methods_invocations), run through pln at one
group of all features (g = C): PLN is layer_norm there and PLS rms_norm. In
float32, float64, bfloat16 and float16 pln's output and gradients lie as
close to the exact result (torch's op in float64 on the same values) as
torch's own result in that dtype: within twice torch's error plus torch's
tolerance for the dtype, element by element. The samples include groups of
one and two features, whose exact input gradient is zero and torch's a
rounding residue, and float16 groups whose sum of squares overflows."""

import pytest
import torch

import pln.functional as PF
from shared import needs_torch

pytestmark = needs_torch(2, 4, "rms_norm's OpInfo needs")

DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def _samples(name, dtype):
    from torch.testing._internal.common_methods_invocations import op_db
    (info,) = [o for o in op_db if o.name == name and not o.variant_test_name]
    for sample in info.sample_inputs("cpu", dtype, requires_grad=True):
        shape = sample.args[0] if sample.args else sample.kwargs["normalized_shape"]
        if len(shape) != 1 or sample.input.numel() == 0:
            continue  # pln normalises groups along one axis
        yield info, sample


def _argument(sample, position, name):
    if len(sample.args) > position:
        return sample.args[position]
    return sample.kwargs.get(name)


def _pln_of(name, sample):
    """pln's call for a layer_norm or rms_norm sample: (fn, its tensor inputs)."""
    x = sample.input
    width = x.shape[-1]
    weight = _argument(sample, 1, "weight")
    if name == "nn.functional.layer_norm":
        bias = _argument(sample, 2, "bias")
        eps = _argument(sample, 3, "eps")
        eps = 1e-5 if eps is None else eps
        return lambda x, w, b: PF.parallel_ln(x, width, w, b, eps), bias
    eps = _argument(sample, 2, "eps")
    eps = torch.finfo(x.dtype).eps if eps is None else eps  # rms_norm's default
    return lambda x, w, b: PF.pls(x, width, w, b, eps), None


def _close_as_torch(got, torch_result, exact, context):
    """got no further from exact than twice torch_result's distance plus
    assert_close's default tolerance for the dtype, element by element."""
    rtol, atol = torch.testing._comparison.default_tolerances(got)
    exact = exact.to(torch.float64)
    allowed = 2 * (torch_result.double() - exact).abs() + atol + rtol * exact.abs()
    error = (got.double() - exact).abs()
    worst = (error - allowed).argmax()
    assert bool((error <= allowed).all()), (
        f"{context}: error {error.flatten()[worst].item():.3g} against the float64 result, "
        f"allowed {allowed.flatten()[worst].item():.3g} (torch's error {((torch_result.double() - exact).abs()).flatten()[worst].item():.3g})")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: str(t).split(".")[-1])
@pytest.mark.parametrize("name", ["nn.functional.layer_norm", "nn.functional.rms_norm"])
def test_samples_match_torch(name, dtype):
    checked = 0
    for info, sample in _samples(name, dtype):
        ours, bias = _pln_of(name, sample)
        x, weight = sample.input, _argument(sample, 1, "weight")
        leaves = [t for t in (x, weight, bias) if isinstance(t, torch.Tensor)]
        wanted = [t for t in leaves if t.requires_grad]

        def copies(dtype_of):
            return {id(t): t.detach().to(dtype_of(t)).requires_grad_(t.requires_grad) for t in leaves}

        mine, wide = copies(lambda t: t.dtype), copies(lambda t: torch.float64)
        args = [wide.get(id(a), a) if isinstance(a, torch.Tensor) else a for a in sample.args]
        kwargs = {k: wide.get(id(v), v) if isinstance(v, torch.Tensor) else v for k, v in sample.kwargs.items()}
        if "eps" not in kwargs and len(args) < (4 if name == "nn.functional.layer_norm" else 3):
            # rms_norm's default eps is the input dtype's; the float64 call must take the sample's
            kwargs["eps"] = _default_eps(name, x.dtype)
        expected = info.op(sample.input, *sample.args, **sample.kwargs)
        exact = info.op(wide[id(x)], *args, **kwargs)
        got = ours(mine[id(x)], mine.get(id(weight)) if weight is not None else None,
                   mine.get(id(bias)) if bias is not None else None)
        context = f"{name} {dtype} input {tuple(x.shape)} args {[getattr(a, 'shape', a) for a in sample.args]}"
        _close_as_torch(got, expected, exact, context)
        if not wanted:
            continue
        grad_out = torch.randn_like(expected)
        want = torch.autograd.grad(expected, wanted, grad_out)
        truth = torch.autograd.grad(exact, [wide[id(t)] for t in wanted], grad_out.double())
        have = torch.autograd.grad(got, [mine[id(t)] for t in wanted], grad_out)
        for w, t, h in zip(want, truth, have):
            _close_as_torch(h, w, t, f"{context} gradient")
        checked += 1
    assert checked > 0, f"no sample of {name} in {dtype} maps to pln"


def _default_eps(name, dtype):
    return 1e-5 if name == "nn.functional.layer_norm" else torch.finfo(dtype).eps


def test_a_float16_sum_of_squares_that_overflows():
    """rms_norm's OpInfo sample whose float16 squares overflow (the composite
    path once returned zeros for it)."""
    x = torch.tensor([[640.5, 521.5]], dtype=torch.float16)
    w = torch.tensor([392.5, 347.25], dtype=torch.float16)
    expected = torch.nn.functional.rms_norm(x, (2,), w)
    got = PF.pls(x, 2, w, eps=torch.finfo(torch.float16).eps)
    torch.testing.assert_close(got, expected)
    assert torch.equal(got, torch.tensor([[430.5, 310.0]], dtype=torch.float16))
