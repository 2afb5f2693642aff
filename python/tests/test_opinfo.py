"""PyTorch's own samples of layer_norm and rms_norm (their OpInfo entries in
torch.testing._internal.common_methods_invocations), run through pln at one
group of all features (g = C): PLN is layer_norm there and PLS rms_norm. In
float32, float64, bfloat16 and float16 pln's output and gradients match
torch's within torch's own tolerances for the dtype, including the samples
whose float16 sum of squares overflows."""

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


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: str(t).split(".")[-1])
@pytest.mark.parametrize("name", ["nn.functional.layer_norm", "nn.functional.rms_norm"])
def test_samples_match_torch(name, dtype):
    checked = 0
    for info, sample in _samples(name, dtype):
        ours, bias = _pln_of(name, sample)
        x, weight = sample.input, _argument(sample, 1, "weight")
        expected = info.op(sample.input, *sample.args, **sample.kwargs)
        leaves = [t for t in (x, weight, bias) if isinstance(t, torch.Tensor)]
        inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in leaves]
        mine = dict(zip([id(t) for t in leaves], inputs))
        got = ours(mine[id(x)], mine.get(id(weight)) if weight is not None else None,
                   mine.get(id(bias)) if bias is not None else None)
        context = f"{name} {dtype} input {tuple(x.shape)} args {[getattr(a, 'shape', a) for a in sample.args]}"
        torch.testing.assert_close(got, expected, msg=lambda m: f"{context}: {m}")
        grad_out = torch.randn_like(expected)
        wanted = [t for t in leaves if t.requires_grad]
        if not wanted:
            continue
        want = torch.autograd.grad(expected, wanted, grad_out)
        have = torch.autograd.grad(got, [mine[id(t)] for t in wanted], grad_out)
        for w, h in zip(want, have):
            torch.testing.assert_close(h, w, msg=lambda m: f"{context} gradient: {m}")
        checked += 1
    assert checked > 0, f"no sample of {name} in {dtype} maps to pln"


def test_a_float16_sum_of_squares_that_overflows():
    """rms_norm's OpInfo sample whose float16 squares overflow (the composite
    path once returned zeros for it)."""
    x = torch.tensor([[640.5, 521.5]], dtype=torch.float16)
    w = torch.tensor([392.5, 347.25], dtype=torch.float16)
    expected = torch.nn.functional.rms_norm(x, (2,), w)
    got = PF.pls(x, 2, w, eps=torch.finfo(torch.float16).eps)
    torch.testing.assert_close(got, expected)
    assert torch.equal(got, torch.tensor([[430.5, 310.0]], dtype=torch.float16))
