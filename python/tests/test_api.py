"""The Python API: pln.functional, the modules' constructors, parameters,
state_dict loading and repr, and pln.convert on existing models."""

import copy
import re
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import pln
import pln.functional as PF
from original import OriginalParallelLN
from shared import REPO, TORCH, mamba2_gated_norm, needs_torch2, randomise, reference
from pln.modules import _ParallelNorm



def params(c, seed=1, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(c, generator=gen, dtype=dtype) + 0.5, torch.randn(c, generator=gen, dtype=dtype))


# --------------------------------------------------------------- functional ---

@pytest.mark.parametrize("shape", [(12,), (3, 12), (2, 3, 12), (2, 3, 4, 12), (2, 1, 3, 2, 12)])
def test_functional_features_last_any_rank(shape):
    x = torch.randn(shape) * 2 + 0.5
    w, b = params(12)
    torch.testing.assert_close(PF.parallel_ln(x, 4, w, b), reference(x, 4, w, b), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(PF.parallel_ln(x, 4), reference(x, 4), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", [(3, 12), (2, 12, 5), (2, 12, 3, 4), (2, 12, 2, 3, 2)])
def test_functional_features_first_any_rank(shape):
    x = torch.randn(shape) * 2 + 0.5
    w, b = params(12)
    y = PF.parallel_ln(x, 3, w, b, layout="features_first")
    torch.testing.assert_close(y, reference(x, 3, w, b, axis=1), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("layout,shape,axis", [("nc", (3, 12), 1), ("ntc", (2, 3, 12), 2),
                                               ("nchw", (2, 12, 3, 4), 1), ("nhwc", (2, 3, 4, 12), 3),
                                               ("ncl", (2, 12, 5), 1)])
def test_functional_operator_layouts(layout, shape, axis):
    x = torch.randn(shape)
    w, b = params(12)
    torch.testing.assert_close(PF.parallel_ln(x, 6, w, b, layout=layout),
                               reference(x, 6, w, b, axis=axis), atol=1e-5, rtol=1e-5)


def test_functional_pls_pq_norm_and_keywords():
    x = torch.randn(4, 3, 12, dtype=torch.float64)
    w, b = params(12, dtype=torch.float64)
    torch.testing.assert_close(PF.pls(x, 4, w, b, eps=1e-3), reference(x, 4, w, b, 1e-3, centering=False))
    torch.testing.assert_close(PF.parallel_ln(x, 4, p=3.0), reference(x, 4, p=3.0))
    torch.testing.assert_close(PF.pls(x, 4, p=1.5), reference(x, 4, centering=False, p=1.5))
    torch.testing.assert_close(PF.pq_norm(x, 4, weight=w, p=3.0, q=1.5), reference(x, 4, w, p=3.0, q=1.5))
    torch.testing.assert_close(PF.pq_norm(x, 4, centering=False, p=3.0, q=1.5),
                               reference(x, 4, centering=False, p=3.0, q=1.5))
    # g = C is layer_norm over the features.
    torch.testing.assert_close(PF.parallel_ln(x, 12, w, b), nn.functional.layer_norm(x, (12,), w, b))


def test_functional_gradients_match_the_reference():
    x = torch.randn(3, 2, 8, dtype=torch.float64, requires_grad=True)
    w, b = (t.requires_grad_() for t in params(8, dtype=torch.float64))
    dy = torch.randn(3, 2, 8, dtype=torch.float64)
    got = torch.autograd.grad(PF.parallel_ln(x, 4, w, b), (x, w, b), dy)
    want = torch.autograd.grad(reference(x, 4, w, b), (x, w, b), dy)
    for a, e in zip(got, want):
        torch.testing.assert_close(a, e)


def test_functional_bad_input():
    x = torch.randn(2, 12)
    with pytest.raises(ValueError, match=r"num_per_group \(5\) must be a positive divisor of the number "
                                         r"of features \(12\)"):
        PF.parallel_ln(x, 5)
    with pytest.raises(ValueError, match=r"num_per_group \(0\)"):
        PF.pls(x, 0)
    with pytest.raises(TypeError, match="num_per_group must be an int, got float"):
        PF.parallel_ln(x, 4.0)
    with pytest.raises(ValueError, match="unknown layout 'channels_last'; expected one of features_last"):
        PF.parallel_ln(x, 4, layout="channels_last")
    with pytest.raises(ValueError, match="features_first input needs at least 2 dimensions"):
        PF.parallel_ln(torch.randn(12), 4, layout="features_first")
    with pytest.raises(RuntimeError, match=r"expects a 4-D input \[N, C, H, W\], got a 2-D input"):
        PF.parallel_ln(x, 4, layout="nchw")
    with pytest.raises(TypeError, match="input must be a Tensor, got list"):
        PF.parallel_ln([1.0, 2.0], 1)


def test_py_typed_version_and_exports():
    package = Path(pln.__file__).parent
    assert (package / "py.typed").is_file()
    pyproject = REPO / "pyproject.toml"
    if pyproject.is_file():
        version = re.search(r'^version = "([^"]+)"', pyproject.read_text(), re.M).group(1)
        assert pln.__version__ == version
    assert re.fullmatch(r"\d+\.\d+\.\d+", pln.__version__)
    for name in ("parallel_ln", "pls", "pq_norm"):
        fn = getattr(PF, name)
        assert fn.__doc__ and fn.__annotations__["return"] is torch.Tensor
        assert fn.__annotations__["num_per_group"] is int


# ------------------------------------------------------------------ modules ---

def test_repr_shows_every_non_default_argument():
    assert repr(pln.ParallelLN(16, 4)) == "ParallelLN(16, 4, eps=1e-05, layout=nchw)"
    assert repr(pln.ParallelLN(16, 4, dim=3, p=3)) == "ParallelLN(16, 4, eps=1e-05, layout=ntc, p=3)"
    assert repr(pln.ParallelLN(16, 4, 1e-6, False, dim=2, bias=False)) == \
        "ParallelLN(16, 4, eps=1e-06, layout=nc, centering=False, bias=False)"
    assert repr(pln.PLS(16, 4, elementwise_affine=False)) == \
        "PLS(16, 4, eps=1e-05, layout=nchw, elementwise_affine=False)"
    assert repr(pln.PQNorm(16, 4, p=3.0, q=1.5)) == "PQNorm(16, 4, eps=1e-05, layout=nchw, p=3, q=1.5)"
    assert repr(pln.PQNorm(16, 4, centering=False)) == "PQNorm(16, 4, eps=1e-05, layout=nchw, centering=False)"


def test_layer_norm_keywords():
    norm = pln.ParallelLN(16, 4, bias=False, dim=3)
    assert norm.weight.shape == (16,) and norm.bias is None
    assert dict(norm.named_parameters()).keys() == {"weight"}
    none = pln.ParallelLN(16, 4, elementwise_affine=False)
    assert none.weight is None and none.bias is None and not none.affine
    assert not pln.ParallelLN(16, 4, affine=False).elementwise_affine
    with pytest.raises(ValueError, match="affine=False and elementwise_affine=True contradict"):
        pln.ParallelLN(16, 4, affine=False, elementwise_affine=True)
    double = pln.PQNorm(16, 4, dtype=torch.float64)
    assert double.weight.dtype == torch.float64 and double.bias.dtype == torch.float64
    x = torch.randn(2, 3, 16)
    w_only = randomise(pln.ParallelLN(16, 4, dim=3, bias=False))
    torch.testing.assert_close(w_only(x), reference(x, 4, w_only.weight.detach()), atol=1e-5, rtol=1e-5)


def test_meta_device_then_reset_parameters():
    norm = pln.ParallelLN(16, 4, dim=3, device="meta")
    assert norm.weight.device.type == "meta" and norm.weight.shape == (16,)
    assert norm(torch.empty(2, 5, 16, device="meta")).shape == (2, 5, 16)
    norm.to_empty(device="cpu")
    norm.reset_parameters()  # what FSDP calls after materialising
    assert torch.equal(norm.weight, torch.ones(16)) and torch.equal(norm.bias, torch.zeros(16))


@pytest.mark.parametrize("cls", [pln.ParallelLN, pln.PLS, pln.PQNorm])
@pytest.mark.parametrize("shape", [(16,), (5, 16), (2, 5, 16), (2, 3, 4, 16), (2, 1, 3, 2, 16)])
def test_features_last_modules_take_any_leading_rank(cls, shape):
    x = torch.randn(shape)
    norm = randomise(cls(16, 4, dim=3))
    centering = cls is not pln.PLS
    expected = reference(x, 4, norm.weight.detach(), norm.bias.detach(), centering=centering)
    torch.testing.assert_close(norm(x), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cls(16, 4, layout="nhwc")(x), reference(x, 4, centering=centering),
                               atol=1e-5, rtol=1e-5)


def test_features_first_module_of_any_rank():
    x = torch.randn(2, 8, 3, 2, 2)
    torch.testing.assert_close(pln.ParallelLN(8, 2, layout="features_first")(x), reference(x, 2, axis=1),
                               atol=1e-5, rtol=1e-5)


def test_pqnorm_and_parallel_ln_share_one_base():
    assert not isinstance(pln.PQNorm(8, 4), pln.ParallelLN)
    assert not issubclass(pln.ParallelLN, pln.PQNorm)
    for cls in (pln.ParallelLN, pln.PLS, pln.PQNorm):
        assert issubclass(cls, _ParallelNorm)
        assert cls.reset_parameters is _ParallelNorm.reset_parameters
        assert cls._load_from_state_dict is _ParallelNorm._load_from_state_dict


@pytest.mark.parametrize("dim", [2, 3, 4])
def test_original_state_dict_loads_into_c_shaped_parameters(dim):
    original = randomise(OriginalParallelLN(16, 4, dim=dim))
    ours = pln.ParallelLN(16, 4, dim=dim)
    assert ours.weight.shape == (16,) and original.weight.dim() == dim
    ours.load_state_dict(original.state_dict())
    assert ours.weight.shape == (16,)
    x = torch.randn({2: (3, 16), 3: (2, 3, 16), 4: (2, 16, 3, 3)}[dim])
    torch.testing.assert_close(ours(x), original(x), atol=1e-5, rtol=1e-5)
    # and back: our [C] state_dict loads into another of ours, in a model
    model = nn.Sequential(nn.Identity(), pln.ParallelLN(16, 4, dim=dim))
    model.load_state_dict(nn.Sequential(nn.Identity(), ours).state_dict())
    assert torch.equal(model[1].weight, ours.weight)


def test_state_dict_of_another_width_is_a_clear_error():
    original = nn.Sequential(nn.Identity(), OriginalParallelLN(32, 4))
    ours = nn.Sequential(nn.Identity(), pln.ParallelLN(16, 4))
    with pytest.raises(RuntimeError, match=r"pln: '1.weight' has shape \(1, 32, 1, 1\), 32 values, but this "
                                           r"ParallelLN has num_features=16: a state_dict of another width"):
        ours.load_state_dict(original.state_dict())
    with pytest.raises(RuntimeError, match=r"'bias' has shape \(8,\), 8 values, but this PQNorm has "
                                           r"num_features=16"):
        pln.PQNorm(16, 4).load_state_dict({"weight": torch.ones(16), "bias": torch.zeros(8)})


def test_constructor_bad_input():
    with pytest.raises(ValueError, match=r"num_features \(10\) must be divisible by num_per_group \(4\)"):
        pln.PQNorm(10, 4)
    with pytest.raises(TypeError, match="num_per_group must be an int, got float"):
        pln.ParallelLN(16, 4.0)


# ------------------------------------------------------------------ convert ---

class Block(nn.Module):
    def __init__(self, c=16, rms=True):
        super().__init__()
        self.proj = nn.Linear(8, c)
        self.ln = nn.LayerNorm(c)
        self.inner = nn.Sequential(nn.Linear(c, c), nn.LayerNorm(c, eps=1e-6, bias=False)
                                   if TORCH >= (2, 1) else nn.LayerNorm(c, eps=1e-6))
        self.rms = nn.RMSNorm(c) if rms and hasattr(nn, "RMSNorm") else nn.Identity()
        self.out = nn.Linear(c, 3)

    def forward(self, x):
        return self.out(self.rms(self.inner(self.ln(self.proj(x)))))


def randomise_norms(model, seed=3):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.LayerNorm, nn.GroupNorm)) or type(m).__name__ in ("RMSNorm", "LayerNorm2d"):
                for p in m.parameters(recurse=False):
                    p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
    return model


def test_convert_replaces_and_reports_and_equals_the_original_at_full_width():
    torch.manual_seed(0)
    model = randomise_norms(Block())
    before = copy.deepcopy(model)
    changes = pln.convert(model, num_per_group=16)
    names = [c.name for c in changes]
    assert names[:2] == ["ln", "inner.1"]
    assert all(isinstance(c.new, pln.ParallelLN) for c in changes[:2])
    assert isinstance(model.ln, pln.ParallelLN) and model.ln is changes[0].new
    assert changes[0].old is before.ln or isinstance(changes[0].old, nn.LayerNorm)
    assert torch.equal(model.ln.weight, before.ln.weight)
    assert model.inner[1].eps == 1e-6
    if TORCH >= (2, 1):
        assert model.inner[1].bias is None
    if hasattr(nn, "RMSNorm"):
        assert names[2] == "rms" and isinstance(model.rms, pln.PLS)
        assert model.rms.eps == torch.finfo(torch.float32).eps  # nn.RMSNorm's eps=None
    x = torch.randn(5, 8)
    torch.testing.assert_close(model(x), before(x), atol=2e-6, rtol=2e-5)


def test_convert_group_size_by_name_and_width():
    model = Block(c=12)
    changes = pln.convert(model, lambda name, width: 3 if name.startswith("inner") else width // 2)
    assert {c.name: c.new.num_per_group for c in changes}["ln"] == 6
    assert {c.name: c.new.num_per_group for c in changes}["inner.1"] == 3
    x = torch.randn(5, 8)
    h = model.proj(x)
    torch.testing.assert_close(model.ln(h), reference(h, 6, model.ln.weight.detach(), model.ln.bias.detach()),
                               atol=1e-5, rtol=1e-5)


def test_convert_bad_group_size_names_the_module_and_changes_nothing():
    model = nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 12), nn.LayerNorm(12))
    with pytest.raises(pln.ConversionError, match=r"'2' has 12 features, which num_per_group=8 does not "
                                                  r"divide; give a divisor of 12"):
        pln.convert(model, 8)
    assert isinstance(model[0], nn.LayerNorm) and isinstance(model[2], nn.LayerNorm)
    with pytest.raises(pln.ConversionError, match="group size for '0' must be an int"):
        pln.convert(model, lambda name, width: None)
    assert type(model[0]) is nn.LayerNorm


def test_convert_refuses_group_norm_with_the_reason_when_strict():
    model = nn.Sequential(nn.Conv2d(3, 8, 1), nn.GroupNorm(2, 8), nn.Flatten(), nn.LayerNorm(8 * 4))
    with pytest.raises(pln.ConversionError, match=r"'1' \(GroupNorm\): PLN does not replace it: it "
                                                  r"normalises each group of channels over all positions"):
        pln.convert(model, 4, strict=True)
    assert type(model[3]) is nn.LayerNorm
    changes = pln.convert(model, 4, exclude={"1"})
    assert [c.name for c in changes] == ["3"] and type(model[1]) is nn.GroupNorm


class ChannelsFirstLayerNorm(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def test_convert_layer_norm_subclass_needs_its_layout():
    model = nn.Sequential(nn.Conv2d(3, 8, 1), ChannelsFirstLayerNorm(8))
    with pytest.raises(pln.ConversionError, match=r"'1' \(ChannelsFirstLayerNorm\): a subclass of "
                                                  r"nn.LayerNorm \(.*\) with its own forward, so where its "
                                                  r"features are is unknown"):
        pln.convert(model, 4, strict=True)
    randomise_norms(model)
    before = copy.deepcopy(model)
    pln.convert(model, 8, layouts={ChannelsFirstLayerNorm: "features_first"})
    x = torch.randn(2, 3, 4, 5)
    torch.testing.assert_close(model(x), before(x), atol=1e-5, rtol=1e-5)


def test_convert_other_bad_input():
    with pytest.raises(pln.ConversionError, match=r"normalises over the last 2 axes \(4, 8\)"):
        pln.convert(nn.Sequential(nn.LayerNorm((4, 8))), 4, strict=True)
    with pytest.raises(pln.ConversionError, match="the model is itself a norm layer"):
        pln.convert(nn.LayerNorm(8), 4)
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        pln.convert("model", 4)
    with pytest.raises(pln.ConversionError, match="unknown layout 'sideways'"):
        pln.convert(nn.Sequential(), 4, layouts={nn.LayerNorm: "sideways"})


def encoder(seed=0):
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16), enable_nested_tensor=True)


@pytest.mark.parametrize("train", [True, False])
def test_convert_transformer_encoder_equals_the_original(train):
    model = randomise_norms(encoder()).train(train)
    before = copy.deepcopy(model)
    changes = pln.convert(model, 16)
    assert [c.name for c in changes] == ["layers.0.norm1", "layers.0.norm2", "layers.1.norm1",
                                         "layers.1.norm2", "norm"]
    x = torch.randn(3, 5, 16)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    with torch.no_grad():  # eval + no_grad: where the fused inference path would run
        torch.testing.assert_close(model(x), before(x), atol=1e-5, rtol=1e-5)
        got, want = model(x, src_key_padding_mask=mask), before(x, src_key_padding_mask=mask)
        if want.is_nested:
            want = want.to_padded_tensor(0.0)
        keep = ~mask
        torch.testing.assert_close(got[keep], want[keep], atol=1e-5, rtol=1e-5)


def test_converted_transformer_encoder_never_skips_the_converted_norm():
    """nn.TransformerEncoderLayer's inference fast path reads norm.weight and
    norm.eps and runs full-width LayerNorm: with groups of 4 it must not run."""
    model = randomise_norms(encoder())
    pln.convert(model, 4)
    x = torch.randn(3, 5, 16)
    mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    with torch.no_grad():
        trained = model.train()(x, src_key_padding_mask=mask)  # dropout=0: the unfused path
        evaluated = model.eval()(x, src_key_padding_mask=mask)
        plain = model(x)
    assert not evaluated.is_nested
    torch.testing.assert_close(evaluated, trained, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(plain, model.train()(x), atol=1e-6, rtol=1e-6)
    # and the full-width LayerNorm would have given something else
    full = randomise_norms(encoder()).eval()
    with torch.no_grad():
        assert (full(x) - plain).abs().max() > 1e-2


@needs_torch2
def test_converted_model_trains_under_torch_compile():
    torch.manual_seed(0)
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.Linear(16, 16), nn.RMSNorm(16),
                          nn.Linear(16, 1))
    pln.convert(model, 4)
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, fullgraph=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    opt_eager = torch.optim.SGD(eager.parameters(), lr=0.05)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    losses = []
    for _ in range(4):
        for net, o in ((compiled, opt), (eager, opt_eager)):
            o.zero_grad()
            loss = nn.functional.mse_loss(net(x), y)
            loss.backward()
            o.step()
            if net is compiled:
                losses.append(loss.item())
    assert losses[-1] < losses[0]
    for a, b in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_convert_timm_vit_and_convnext():
    timm = pytest.importorskip("timm", reason="timm is not installed (scripts/venv installs it)")
    torch.manual_seed(0)
    vit = timm.models.VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2,
                                        num_classes=5)
    convnext = timm.models.ConvNeXt(depths=(1, 1, 1, 1), dims=(8, 8, 16, 16), num_classes=5, drop_path_rate=0.0)
    x = torch.randn(2, 3, 32, 32)
    for model in (vit, convnext):
        model = randomise_norms(model).eval()
        before = copy.deepcopy(model)
        widths = {}
        changes = pln.convert(model, lambda name, width: widths.setdefault(name, width))
        assert changes and all(isinstance(c.new, pln.ParallelLN) for c in changes)
        with torch.no_grad():
            torch.testing.assert_close(model(x), before(x), atol=1e-4, rtol=1e-4)
    kinds = {type(c.old).__name__: c.new.layout for c in changes}
    assert kinds.get("LayerNorm2d") == "nchw", kinds  # ConvNeXt's channels-first norm
    grouped = copy.deepcopy(before)
    pln.convert(grouped, 8)
    with torch.no_grad():
        assert grouped(x).shape == (2, 5) and (grouped(x) - before(x)).abs().max() > 1e-4


def test_convert_hugging_face_model_from_config():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv)")
    config = transformers.BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=16)
    torch.manual_seed(0)
    model = randomise_norms(transformers.BertModel(config)).eval()
    before = copy.deepcopy(model)
    changes = pln.convert(model, 32)
    assert len(changes) == 1 + 2 * 2  # embeddings + two per layer
    ids = torch.randint(0, 50, (2, 7))
    with torch.no_grad():
        torch.testing.assert_close(model(ids).last_hidden_state, before(ids).last_hidden_state,
                                   atol=1e-4, rtol=1e-4)


def _converted_equals(model, x, **kw):
    """Converts at full width; returns the conversion and the largest output difference."""
    before = copy.deepcopy(model)
    result = pln.convert(model, lambda name, width: width, **kw)
    with torch.no_grad():
        return result, (model(x).float() - before(x).float()).abs().max().item()


def test_convert_rms_norm_classes_become_pls_whatever_they_are_named():
    """An RMS norm named in layouts= (or recognised by its class) becomes PLS, never a centred
    ParallelLN; Hugging Face's and T5's classes have no normalized_shape and still convert;
    Gemma's (1 + weight) form is carried into the weight."""
    timm = pytest.importorskip("timm", reason="timm is not installed (scripts/venv installs it)")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv)")
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.t5.modeling_t5 import T5LayerNorm
    x = torch.randn(3, 4) * 2 + 1
    for cls, layouts in ((timm.layers.RmsNorm, {timm.layers.RmsNorm: "features_last"}), (timm.layers.RmsNorm, None),
                         (T5LayerNorm, {T5LayerNorm: "features_last"}), (T5LayerNorm, None),
                         (LlamaRMSNorm, {LlamaRMSNorm: "features_last"}), (GemmaRMSNorm, None)):
        model = randomise(nn.Sequential(nn.Linear(4, 8), cls(8)))
        result, diff = _converted_equals(model, x, layouts=layouts)
        assert [type(c.new) for c in result] == [pln.PLS], (cls, layouts)
        assert diff < 1e-5, (cls, layouts, diff)
        assert result.skipped == []
    assert torch.allclose(model[1].weight, result[0].old.weight + 1)  # Gemma's


def test_convert_refuses_what_its_replacement_would_not_compute():
    """timm's LayerNormAct2d applies an activation after the norm: naming its layout does not
    make it a LayerNorm, and the model is left as it was."""
    timm = pytest.importorskip("timm", reason="timm is not installed (scripts/venv installs it)")
    from timm.layers.norm_act import LayerNormAct2d
    model = randomise(nn.Sequential(nn.Conv2d(3, 8, 1), LayerNormAct2d(8)))
    with pytest.raises(pln.ConversionError, match=r"'1' \(LayerNormAct2d, given in layouts=\) is not replaced: at "
                                                  r"full width neither a LayerNorm nor an RMSNorm"):
        pln.convert(model, 4, layouts={LayerNormAct2d: "features_first"})
    assert type(model[1]) is LayerNormAct2d
    # Without its activation it is a LayerNorm over channels, and converts.
    plain = randomise(nn.Sequential(nn.Conv2d(3, 8, 1), LayerNormAct2d(8, apply_act=False)))
    result, diff = _converted_equals(plain, torch.randn(2, 3, 4, 4), layouts={LayerNormAct2d: "features_first"})
    assert [type(c.new) for c in result] == [pln.ParallelLN] and diff < 1e-5


def test_convert_subclass_of_a_known_norm_keeps_its_layout():
    timm = pytest.importorskip("timm", reason="timm is not installed (scripts/venv installs it)")
    from timm.models.metaformer import LayerNorm2dNoBias
    model = randomise(nn.Sequential(nn.Conv2d(3, 8, 1), LayerNorm2dNoBias(8)))
    result, diff = _converted_equals(model, torch.randn(2, 3, 4, 4))
    assert result[0].new.layout == "nchw" and result[0].new.bias is None and diff < 1e-5


def test_half_precision_input_with_float32_parameters_as_layer_norm_takes_it():
    ln = randomise(nn.LayerNorm(8))
    converted = nn.Sequential(copy.deepcopy(ln))
    pln.convert(converted, 8)
    for dtype in (torch.bfloat16, torch.float16):
        x = torch.randn(3, 8, dtype=dtype) * 3 + 1
        y = converted(x)
        assert y.dtype == dtype
        # Computed in float32, rounded once: as nn.LayerNorm computes it (torch 2.x; 1.13 refuses the mix).
        torch.testing.assert_close(y, ln(x.float()).to(dtype), atol=0, rtol=0)
        if TORCH >= (2, 0):
            torch.testing.assert_close(y, ln(x), atol=0, rtol=0)
    x = torch.randn(3, 8, dtype=torch.bfloat16, requires_grad=True)
    converted(x).sum().backward()
    assert x.grad.dtype == torch.bfloat16 and converted[0].weight.grad.dtype == torch.float32
    timm = pytest.importorskip("timm", reason="timm is not installed (scripts/venv installs it)")
    fp32 = randomise(nn.Sequential(timm.layers.norm.LayerNormFp32(8)))
    before = copy.deepcopy(fp32)
    pln.convert(fp32, 4 * 2)
    x = torch.randn(3, 8, dtype=torch.bfloat16)
    torch.testing.assert_close(fp32(x), before(x), atol=0, rtol=0)


class NoisyNorm(nn.Module):
    """A norm-like class pln.convert does not know."""

    def forward(self, x):
        return x / x.std(-1, keepdim=True)


def test_convert_reports_and_warns_about_every_norm_it_leaves_alone():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv)")
    MambaRMSNormGated = mamba2_gated_norm()
    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), MambaRMSNormGated(8, group_size=4), NoisyNorm(),
                          nn.BatchNorm1d(8), nn.LayerNorm(8))
    with pytest.warns(UserWarning, match=r"left 1 norm-like module\(s\) as they were: '3' \(NoisyNorm\): "
                                         r"NoisyNorm is not a LayerNorm or RMSNorm"):
        result = pln.convert(model, 4, exclude={"5"})
    assert [c.name for c in result] == ["1", "2"] and isinstance(result[1].new, pln.GatedNorm)
    assert [(s.name, type(s.module).__name__) for s in result.skipped] == [
        ("3", "NoisyNorm"), ("4", "BatchNorm1d"), ("5", "LayerNorm")]
    assert result.skipped[2].reason == "excluded" and "over the batch" in result.skipped[1].reason
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pln.convert(copy.deepcopy(model), 4, warn=False)


def test_hugging_face_save_and_load_then_convert_again(tmp_path):
    """save_pretrained of a converted model, from_pretrained (the model's own norm classes
    again), convert again: the logits of the converted model, as the docs say."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv)")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                      num_key_value_heads=2, intermediate_size=64)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.rand(p.shape))
    pln.convert(model, 8)
    ids = torch.randint(0, 64, (1, 5))
    with torch.no_grad():
        converted = model(ids).logits
    model.save_pretrained(tmp_path)
    loaded = transformers.LlamaForCausalLM.from_pretrained(tmp_path).eval()
    assert {type(m).__name__ for m in loaded.modules() if "Norm" in type(m).__name__} == {"LlamaRMSNorm"}
    pln.convert(loaded, 8)
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, converted, atol=1e-5, rtol=1e-5)


def _small_models():
    """Models of the libraries pln.convert is used on, from configs (random weights)."""
    models = {}
    timm = pytest.importorskip("timm", reason="timm is not installed (scripts/venv installs it)")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv)")
    models["vit"] = timm.models.VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=1, num_heads=2)
    models["convnext"] = timm.models.ConvNeXt(depths=(1, 1, 1, 1), dims=(8, 8, 16, 16), num_classes=5)
    models["caformer"] = timm.create_model("caformer_s18", pretrained=False, num_classes=5)
    small = dict(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    models["bert"] = transformers.BertModel(transformers.BertConfig(**small))
    models["llama"] = transformers.LlamaForCausalLM(transformers.LlamaConfig(**small, num_key_value_heads=2))
    models["t5"] = transformers.T5Model(transformers.T5Config(vocab_size=64, d_model=32, d_kv=16, d_ff=64,
                                                              num_layers=1, num_heads=2))
    models["gemma"] = transformers.GemmaForCausalLM(transformers.GemmaConfig(**small, num_key_value_heads=2,
                                                                             head_dim=16))
    models["mamba2"] = transformers.Mamba2ForCausalLM(transformers.Mamba2Config(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_heads=4, head_dim=16, state_size=8, n_groups=1,
        expand=2, conv_kernel=4))
    return models


def test_no_norm_like_module_is_left_alone_silently():
    """Every module whose class is named like a norm is either replaced or reported with a reason,
    containers of norms (timm's NormMlpClassifierHead) apart: their norms are, under their own names."""
    def holds_norms(m):
        return any(re.search("norm", type(c).__name__, re.IGNORECASE) for c in m.modules() if c is not m)

    for label, model in _small_models().items():
        norms = {name for name, m in model.named_modules()
                 if re.search("norm", type(m).__name__, re.IGNORECASE) and not holds_norms(m)}
        assert norms, label
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = pln.convert(model, lambda name, width: width)
        replaced = {c.name for c in result}
        reported = {s.name for s in result.skipped if s.reason}
        assert norms == replaced | reported, (label, norms - replaced - reported)
        assert not replaced & reported, label
    # The Mamba-2 model's gated norm and plain RMS norms are all replaced.
    assert result.skipped == []
    assert {type(c.old).__name__ for c in result} == {"Mamba2RMSNorm", mamba2_gated_norm().__name__}


# ------------------------------------------------ generated inputs (Hypothesis) ---

def test_functional_on_generated_shapes_strides_and_views():
    """Shapes, group sizes, transposed and sliced views nobody chose, against the reference."""
    hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed (scripts/venv installs it)")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=60, deadline=None, derandomize=True)
    @hypothesis.given(groups=st.integers(1, 4), g=st.sampled_from([1, 2, 3, 8]),
                      lead=st.lists(st.integers(1, 4), min_size=0, max_size=3),
                      view=st.sampled_from(["contiguous", "transposed", "sliced", "expanded"]),
                      first=st.booleans(), centering=st.booleans(), affine=st.booleans())
    def check(groups, g, lead, view, first, centering, affine):
        c = groups * g
        if first:
            lead = lead or [2]
            shape = [lead[0], c] + lead[1:]
        else:
            shape = lead + [c]
        if view == "transposed" and len(shape) >= 2:
            x = torch.randn(shape[::-1]).permute(*range(len(shape) - 1, -1, -1))
        elif view == "sliced":
            x = torch.randn(shape[:-1] + [shape[-1] * 2])[..., ::2]
        elif view == "expanded" and len(shape) >= 2:
            x = torch.randn([1] + shape[1:]).expand(shape)
        else:
            x = torch.randn(shape)
        assert list(x.shape) == shape
        w, b = params(c) if affine else (None, None)
        axis = 1 if first else -1
        layout = "features_first" if first else "features_last"
        fn = PF.parallel_ln if centering else PF.pls
        y = fn(x, g, w, b, layout=layout)
        torch.testing.assert_close(y, reference(x, g, w, b, centering=centering, axis=axis), atol=1e-4, rtol=1e-4)

    check()


@pytest.mark.parametrize("cls,kwargs", [
    (pln.ParallelLN, {"centring": False}),
    (pln.PLS, {"centering": True}),
    (pln.PQNorm, {"r": 3.0}),
])
def test_unknown_keyword_arguments_raise_type_error(cls, kwargs):
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        cls(16, 4, **kwargs)
