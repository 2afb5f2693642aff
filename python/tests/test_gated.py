"""The gated norm (torch.ops.pln.gated_norm, pln.GatedNorm): against a float64
statement of its formula and its gradients, under opcheck and torch.compile,
against the Mamba-2 and Gated DeltaNet classes of transformers, and in models
pln.convert converts."""

import contextlib
import copy
import itertools
import warnings

import pytest
import torch
import torch.nn.functional as TF

import pln
import pln.functional as PF
from shared import TORCH, mamba2_gated_norm, needs_torch2, randomise

VARIANTS = list(itertools.product([False, True], ["before", "after"], ["silu", "sigmoid"]))


def reference(x, z, g, w=None, b=None, eps=1e-5, centering=False, position="before", act="silu"):
    """The formula in float64, written out."""
    x, z = x.double(), z.double()
    a = torch.sigmoid(z) if act == "sigmoid" else z * torch.sigmoid(z)
    h = x * a if position == "before" else x
    hg = h.reshape(*h.shape[:-1], -1, g)
    if centering:
        hg = hg - hg.mean(-1, keepdim=True)
    y = (hg / torch.sqrt(hg.pow(2).mean(-1, keepdim=True) + eps)).reshape(h.shape)
    if w is not None:
        y = y * w.double()
    if b is not None:
        y = y + b.double()
    return y * a if position == "after" else y


def tensors(shape, dtype, seed=0, grad=False):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) * 2 + 0.5).to(dtype).requires_grad_(grad)
    z = (torch.randn(shape, generator=gen, dtype=torch.float64) * 1.5).to(dtype).requires_grad_(grad)
    c = shape[-1]
    w = (torch.rand(c, generator=gen, dtype=torch.float64) + 0.5).to(dtype).requires_grad_(grad)
    b = torch.randn(c, generator=gen, dtype=torch.float64).to(dtype).requires_grad_(grad)
    return x, z, w, b


@pytest.mark.parametrize("centering,position,act", VARIANTS)
@pytest.mark.parametrize("shape,g", [((6, 16), 4), ((2, 3, 64), 64), ((5, 640), 128), ((3, 1, 24), 1)])
def test_forward_and_gradients_against_the_formula(centering, position, act, shape, g):
    x, z, w, b = tensors(shape, torch.float32, grad=True)
    kw = dict(centering=centering, gate_position=position, activation=act)
    y = PF.gated_norm(x, z, g, w, b, **kw)
    x64, z64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, z, w, b))
    want = reference(x64, z64, g, w64, b64, centering=centering, position=position, act=act)
    torch.testing.assert_close(y.double(), want, atol=2e-5, rtol=2e-5)
    dy = torch.randn(shape, dtype=torch.float64)
    y.backward(dy.float())
    want.backward(dy)
    for got, ref, name in ((x.grad, x64.grad, "dx"), (z.grad, z64.grad, "dz"), (w.grad, w64.grad, "dw"),
                           (b.grad, b64.grad, "db")):
        scale = ref.abs().max().item() + 1e-6
        assert (got.double() - ref).abs().max().item() <= 1e-4 * scale + 1e-5, (name, kw)


@pytest.mark.parametrize("centering,position,act", VARIANTS)
def test_gradcheck_and_second_derivatives(centering, position, act):
    x, z, w, b = tensors((3, 8), torch.float64, seed=3, grad=True)
    fn = lambda x, z, w, b: PF.gated_norm(x, z, 4, w, b, centering=centering, gate_position=position,
                                          activation=act)
    assert torch.autograd.gradcheck(fn, (x, z, w, b))
    assert torch.autograd.gradgradcheck(fn, (x, z, w, b))


def test_without_weight_or_bias_and_in_half_precision():
    x, z, w, _ = tensors((4, 32), torch.float32)
    torch.testing.assert_close(PF.gated_norm(x, z, 8).double(), reference(x, z, 8), atol=2e-5, rtol=2e-5)
    for dtype in (torch.bfloat16, torch.float16):
        xh, zh = x.to(dtype), z.to(dtype)
        y = PF.gated_norm(xh, zh, 8, w)  # float32 weight, as a model under autocast holds it
        assert y.dtype == dtype
        torch.testing.assert_close(y.float(), reference(xh, zh, 8, w).float().to(dtype).float(), atol=0, rtol=0)


def test_autocast_computes_mixed_dtypes_in_float32_and_returns_the_inputs():
    """torch.ops.pln.gated_norm under autocast: a bfloat16 input beside a float32
    gate and float32 weight (a Linear's output beside a scan's) runs in float32
    and returns bfloat16; gradients reach every tensor in its own dtype."""
    x, z, w, _ = tensors((4, 32), torch.float32)
    xh = x.to(torch.bfloat16).requires_grad_()
    zf, wf = z.clone().requires_grad_(), w.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="the gate is Float on cpu but the input is BFloat16"):
        torch.ops.pln.gated_norm(xh, zf, wf, None, 32, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch.ops.pln.gated_norm(xh, zf, wf, None, 32, 8)
    assert y.dtype == torch.bfloat16
    want = reference(xh.detach().float(), z, 8, w).float()
    torch.testing.assert_close(y.float(), want, atol=0, rtol=2 ** -8)  # one rounding to bfloat16
    y.float().sum().backward()
    assert (xh.grad.dtype, zf.grad.dtype, wf.grad.dtype) == (torch.bfloat16, torch.float32, torch.float32)
    assert all(t.grad.abs().sum() > 0 for t in (xh, zf, wf))
    # Tensors of one dtype run as they are.
    with torch.autocast("cpu", dtype=torch.bfloat16):
        same = torch.ops.pln.gated_norm(x, z, w, None, 32, 8)
    assert same.dtype == torch.float32
    torch.testing.assert_close(same, torch.ops.pln.gated_norm(x, z, w, None, 32, 8), atol=0, rtol=0)


def test_bad_input_names_the_problem():
    x, z, w, _ = tensors((4, 32), torch.float32)
    with pytest.raises(RuntimeError, match=r"the gate has shape \[4, 16\] but the input has shape \[4, 32\]"):
        PF.gated_norm(x, z[:, :16], 8)
    with pytest.raises(RuntimeError, match="gate_position must be 'before' or 'after'"):
        PF.gated_norm(x, z, 8, gate_position="inside")
    with pytest.raises(RuntimeError, match="activation must be 'silu' or 'sigmoid', got 'relu'"):
        PF.gated_norm(x, z, 8, activation="relu")
    with pytest.raises(ValueError, match=r"num_per_group \(5\) must be a positive divisor"):
        PF.gated_norm(x, z, 5)
    with pytest.raises(RuntimeError, match="weight has 16 elements, expected 32"):
        PF.gated_norm(x, z, 8, w[:16])
    with pytest.raises(ValueError, match="gate_position must be 'before' or 'after'"):
        pln.GatedNorm(32, 8, gate_position="inside")


@needs_torch2
@pytest.mark.parametrize("fake", [False, True], ids=["cpu", "fake"])
def test_backward_op_names_a_gradient_or_statistics_of_another_input(fake):
    """The CPU kernel and the fake kernel (torch.compile's) give one message."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    x, z, w, b = tensors((4, 32), torch.float32)
    _, mean, rstd = torch.ops.pln.gated_norm_forward(x, z, w, b, 32, 8)
    args = (w, b, 32, 8)
    with FakeTensorMode(allow_non_fake_inputs=True) if fake else contextlib.nullcontext():
        with pytest.raises(RuntimeError, match=r"grad_output is Float of shape \[4, 16\], the input Float of "
                                               r"shape \[4, 32\]"):
            torch.ops.pln.gated_norm_backward(x[:, :16], x, z, mean, rstd, *args)
        with pytest.raises(RuntimeError, match="grad_output is Double of shape"):
            torch.ops.pln.gated_norm_backward(x.double(), x, z, mean, rstd, *args)
        with pytest.raises(RuntimeError, match="expected the forward's statistics, one per group"):
            torch.ops.pln.gated_norm_backward(x, x, z, mean[:2], rstd, *args)
        with pytest.raises(RuntimeError, match="expected the forward's statistics, one per group"):
            torch.ops.pln.gated_norm_backward(x, x, z, mean.double(), rstd, *args)


@pytest.mark.parametrize("position", ["before", "after"])
def test_backward_op_gives_fresh_gradients_for_a_one_dimensional_input(position):
    """With autograd recording (the gradient's formulation), a 1-D input has no
    rows to sum the parameters' gradients over: they are still results of
    their own, never views of grad_output."""
    x, z, w, b = tensors((32,), torch.float64, grad=True)
    _, mean, rstd = torch.ops.pln.gated_norm_forward(x.detach(), z.detach(), w.detach(), b.detach(), 32, 8, 1e-5,
                                                     False, position, "silu")
    dy = torch.randn(32, dtype=torch.float64)
    grads = torch.ops.pln.gated_norm_backward(dy, x, z, mean, rstd, w, b, 32, 8, 1e-5, False, position, "silu")
    fused = torch.ops.pln.gated_norm_backward(dy, x.detach(), z.detach(), mean, rstd, w.detach(), b.detach(), 32, 8,
                                              1e-5, False, position, "silu")
    for g, f in zip(grads, fused):
        assert g.data_ptr() != dy.data_ptr()
        torch.testing.assert_close(g.detach(), f)


@needs_torch2
@pytest.mark.parametrize("position", ["before", "after"])
def test_opcheck(position):
    from torch.library import opcheck
    for grad in (False, True):
        x, z, w, b = tensors((3, 5, 16), torch.float32, grad=grad)
        results = opcheck(torch.ops.pln.gated_norm.default, (x, z, w, b, 16, 4, 1e-5, False, position, "silu"))
        assert all(v == "SUCCESS" for v in results.values()), results


@needs_torch2
def test_compiled_forward_and_backward_equal_eager():
    torch._dynamo.reset()
    norm = randomise(pln.GatedNorm(32, 8, 1e-6))
    compiled = torch.compile(norm, fullgraph=True)
    x, z, _, _ = tensors((4, 32), torch.float32, grad=True)
    xe, ze = x.detach().clone().requires_grad_(), z.detach().clone().requires_grad_()
    y, ye = compiled(x, z), norm(xe, ze)
    torch.testing.assert_close(y, ye)
    y.sum().backward()
    ye.sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)
    torch.testing.assert_close(z.grad, ze.grad)


# ------------------------------------------------------- transformers' classes ---

def _transformers():
    return pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv installs it)")


def test_module_equals_mamba2_and_qwen3_next_norms_and_loads_their_state():
    _transformers()
    MambaRMSNormGated = mamba2_gated_norm()
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextRMSNormGated
    cases = [(MambaRMSNormGated(64, group_size=16, eps=1e-6), pln.GatedNorm(64, 16, 1e-6)),
             (Qwen3NextRMSNormGated(64, eps=1e-6), pln.GatedNorm(64, 64, 1e-6, gate_position="after"))]
    for theirs, ours in cases:
        randomise(theirs)
        ours.load_state_dict(theirs.state_dict())
        x, z, _, _ = tensors((2, 3, 64), torch.float32)
        torch.testing.assert_close(ours(x, z), theirs(x, z), atol=1e-5, rtol=1e-5)
        for dtype in (torch.bfloat16,):
            a, b = copy.deepcopy(ours).to(dtype), copy.deepcopy(theirs).to(dtype)
            got, want = a(x.to(dtype), z.to(dtype)).float(), b(x.to(dtype), z.to(dtype)).float()
            # A few bfloat16 roundings apart: theirs rounds before the weight (and after the gate), ours once.
            assert ((got - want).abs() <= 4 * 2 ** -8 * want.abs() + 1e-6).all(), (got - want).abs().max()


def _mamba2(transformers):
    config = transformers.Mamba2Config(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_heads=4, head_dim=16,
                                       state_size=8, n_groups=2, expand=2, conv_kernel=4, chunk_size=8)
    return transformers.Mamba2ForCausalLM(config)


def _qwen3_next(transformers):
    config = transformers.Qwen3NextConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, linear_num_value_heads=2, linear_num_key_heads=1,
        linear_key_head_dim=16, linear_value_head_dim=16, num_experts=2, num_experts_per_tok=1,
        moe_intermediate_size=32, shared_expert_intermediate_size=32, mlp_only_layers=[0, 1],
        layer_types=["linear_attention",
                                                                                   "full_attention"])
    return transformers.Qwen3NextForCausalLM(config)


@pytest.mark.parametrize("family", ["mamba2", "qwen3_next"])
def test_converted_model_logits_equal_the_original(family):
    transformers = _transformers()
    torch.manual_seed(0)
    model = randomise({"mamba2": _mamba2, "qwen3_next": _qwen3_next}[family](transformers)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.3)  # keep the random model's activations in a sane range
    before = copy.deepcopy(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing norm-like is left alone
        result = pln.convert(model, "same")
    gated = [c for c in result if isinstance(c.new, pln.GatedNorm)]
    assert gated, [type(c.old).__name__ for c in result]
    assert all("Gated" in type(c.old).__name__ for c in gated)
    assert result.skipped == []
    ids = torch.randint(0, 64, (2, 9))
    with torch.no_grad():
        got, want = model(ids).logits, before(ids).logits
    torch.testing.assert_close(got, want, atol=1e-5 * want.abs().max().item(), rtol=1e-5)
    # Training mode too, and a backward through the fused kernels.
    model.train()
    before.train()
    loss = model(ids, labels=ids).loss
    loss.backward()
    torch.testing.assert_close(loss, before(ids, labels=ids).loss, atol=1e-5, rtol=1e-5)
    assert all(p.grad is not None for c in gated for p in c.new.parameters())


class _Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids, use_cache=False).logits


@needs_torch2
@pytest.mark.parametrize("family", ["mamba2", "qwen3_next"])
def test_converted_model_exports_to_standard_onnx(family, tmp_path):
    """torch.onnx.export of a converted model with nothing but import pln: standard
    operators, and onnxruntime gives the model's logits."""
    transformers = _transformers()
    onnx = pytest.importorskip("onnx", reason="onnx is not installed (scripts/venv installs it)")
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (scripts/venv installs it)")
    torch.manual_seed(0)
    model = randomise({"mamba2": _mamba2, "qwen3_next": _qwen3_next}[family](transformers)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert any(isinstance(c.new, pln.GatedNorm) for c in pln.convert(model, "same"))
        ids = torch.randint(0, 64, (2, 9))
        program = torch.onnx.export(_Logits(model), (ids,), dynamo=True)
    path = tmp_path / "model.onnx"
    program.save(str(path))
    graph = onnx.load(str(path))
    assert {n.domain for n in graph.graph.node} <= {"", "ai.onnx"}
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: ids.numpy()})
    with torch.no_grad():
        want = _Logits(model)(ids)
    torch.testing.assert_close(torch.from_numpy(got), want, atol=1e-5 * want.abs().max().item(), rtol=1e-4)
