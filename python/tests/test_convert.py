"""pln.convert never changes a model without a word: what a norm computes is
decided by its class and confirmed on weights the probe sets itself, shared
instances and converted models are converted whole, and what cannot convert is
skipped with its reason (or refused, with strict=True)."""
import copy
import warnings

import pytest
import torch
import torch.nn as nn

import pln
from shared import randomise, reference


def _transformers():
    return pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv installs it)")


def _timm():
    return pytest.importorskip("timm", reason="timm is not installed (scripts/venv installs it)")


class _RMSNorm(nn.Module):
    """torch's nn.RMSNorm (torch 2.4 and later) for the torch that lacks it."""

    def __init__(self, width: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(width)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


RMSNorm = getattr(nn, "RMSNorm", _RMSNorm)


def _quiet_convert(model, num_per_group, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pln.convert(model, num_per_group, **kw)


# ------------------------------------------------ centred or not: the class decides ---

def _rms_norms_named_as_such():
    transformers, timm = _transformers(), _timm()
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.t5.modeling_t5 import T5LayerNorm
    return {"LlamaRMSNorm": LlamaRMSNorm(16, eps=1e-6), "timm RmsNorm": timm.layers.RmsNorm(16),
            "T5LayerNorm": T5LayerNorm(16)}


@pytest.mark.parametrize("label", ["LlamaRMSNorm", "timm RmsNorm", "T5LayerNorm"])
def test_rms_norm_with_a_zero_weight_becomes_pls(label):
    """At a zero weight every norm outputs zeros, so a probe on the module's own
    weight cannot tell centred from uncentred; the weight set later tells."""
    norm = _rms_norms_named_as_such()[label]
    with torch.no_grad():
        norm.weight.zero_()
    model = nn.Sequential(nn.Linear(8, 16), norm)
    original = copy.deepcopy(model)
    result = pln.convert(model, "same")
    assert [c.name for c in result] == ["1"] and type(model[1]) is pln.PLS, model[1]
    assert torch.equal(result[0].old.weight, torch.zeros(16)), "the probe left the module's weight changed"
    with torch.no_grad():
        model[1].weight.fill_(0.5)
        original[1].weight.fill_(0.5)
    x = torch.randn(4, 8) + 2.0  # a mean far from 0: a centred norm would differ
    with torch.no_grad():
        torch.testing.assert_close(model(x), original(x), atol=1e-6, rtol=1e-5)


def test_probe_restores_the_weights_it_sets():
    """Even for a module left alone, the weights are what they were, bit for bit."""
    class TanhRMSNorm(nn.Module):  # an RMS norm with an activation: neither norm alone
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(16))
            self.eps = 1e-6

        def forward(self, x):
            return torch.tanh(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight)

    model = nn.Sequential(nn.Linear(8, 16), TanhRMSNorm())
    before = model[1].weight.detach().clone()
    result = _quiet_convert(model, "same")
    assert [s.name for s in result.skipped] == ["1"]
    assert torch.equal(model[1].weight, before)


# ------------------------------------------------ shared instances ---

class SharedNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 16)
        self.a = nn.LayerNorm(16)
        self.b = self.a  # one norm, two names

    def forward(self, x):
        return self.b(self.a(self.proj(x)))


def test_a_norm_under_two_names_gets_one_replacement_under_both():
    model = randomise(SharedNorm())
    result = pln.convert(model, 8)
    assert isinstance(model.a, pln.ParallelLN) and model.a is model.b
    assert sorted(c.name for c in result) == ["a", "b"] and result[0].new is result[1].new
    assert result.skipped == []
    x = torch.randn(3, 8)
    h = reference(model.proj(x), 8, model.a.weight.detach(), model.a.bias.detach())
    want = reference(h, 8, model.a.weight.detach(), model.a.bias.detach())
    torch.testing.assert_close(model(x), want, atol=1e-5, rtol=1e-5)


# ------------------------------------------------ a converted model, converted again ---

def test_converting_a_converted_model_again_changes_its_group_size():
    model = randomise(nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.Linear(16, 16), RMSNorm(16)))
    first = pln.convert(model, "same")
    assert [c.new.num_per_group for c in first] == [16, 16]
    assert pln.convert(model, "same") == [], "'same' keeps each module's grouping: nothing to change"
    before = copy.deepcopy(model)
    again = pln.convert(model, 8)
    assert [(c.name, type(c.new).__name__, c.new.num_per_group) for c in again] == [
        ("1", "ParallelLN", 8), ("3", "PLS", 8)]
    assert again[0].old is before[1] or again[0].old.num_per_group == 16
    assert model[3].eps == before[3].eps and torch.equal(model[3].weight, before[3].weight)
    x = torch.randn(3, 8)
    h = reference(model[0](x), 8, model[1].weight.detach(), model[1].bias.detach())
    want = reference(model[2](h), 8, model[3].weight.detach(), eps=model[3].eps, centering=False)
    torch.testing.assert_close(model(x), want, atol=1e-5, rtol=1e-5)


# ------------------------------------------------ norms without parameters or eps ---

class ParameterFreeLayerNorm(nn.Module):
    """OLMo's LayerNorm: no weight, no bias, no eps attribute (1e-5 inside forward)."""

    def __init__(self, hidden_size):
        super().__init__()
        self.normalized_shape = (hidden_size,)

    def forward(self, x):
        return nn.functional.layer_norm(x, self.normalized_shape, None, None, eps=1e-5)


def _olmo_style(config=None):
    model = nn.Sequential(nn.Linear(8, 16), ParameterFreeLayerNorm(16), nn.Linear(16, 16), nn.LayerNorm(16))
    if config is not None:
        model.config = config
    return model


def test_norm_without_eps_takes_it_from_the_argument_or_the_config():
    with pytest.warns(UserWarning, match=r"'1' \(ParameterFreeLayerNorm\): its epsilon is unknown .*eps="):
        result = pln.convert(_olmo_style(), "same")
    assert [c.name for c in result] == ["3"] and [s.name for s in result.skipped] == ["1"]
    with pytest.raises(pln.ConversionError, match=r"'1' .*epsilon is unknown.*eps=1e-5"):
        pln.convert(_olmo_style(), "same", strict=True)

    x = torch.randn(3, 8) * 0.01  # small: the epsilon matters
    for model, kw in ((_olmo_style(), {"eps": 1e-5}),
                      (_olmo_style(type("Config", (), {"layer_norm_eps": 1e-5})()), {})):
        original = copy.deepcopy(model)
        result = pln.convert(model, "same", **kw)
        assert [c.name for c in result] == ["1", "3"] and model[1].eps == 1e-5
        assert model[1].weight is None and model[1].bias is None
        torch.testing.assert_close(model(x), original(x), atol=1e-6, rtol=1e-5)


def test_a_wrong_eps_is_refused_not_taken():
    with pytest.warns(UserWarning, match=r"'1' \(ParameterFreeLayerNorm\).* off by"):
        result = pln.convert(_olmo_style(), "same", eps=1e-2)
    assert [c.name for c in result] == ["3"]


# ------------------------------------------------ skip, or refuse when strict ---

def test_one_module_that_cannot_convert_is_skipped_and_the_rest_converted():
    model = nn.Sequential(nn.Conv2d(3, 8, 1), nn.GroupNorm(2, 8), nn.Flatten(), nn.LayerNorm(8 * 4),
                          nn.Linear(32, 16), nn.LayerNorm(16))
    with pytest.warns(UserWarning, match=r"'1' \(GroupNorm\): PLN does not replace it: it normalises each group "
                                         r"of channels over all positions"):
        result = pln.convert(model, 4)
    assert [c.name for c in result] == ["3", "5"] and type(model[1]) is nn.GroupNorm
    assert [s.name for s in result.skipped] == ["1"]
    kept = nn.Sequential(nn.GroupNorm(2, 8), nn.LayerNorm(8), nn.GroupNorm(4, 8))
    with pytest.raises(pln.ConversionError, match=r"strict=True\): 2 norm-like module\(s\) cannot be converted: "
                                                  r"'0' \(GroupNorm\): .*'2' \(GroupNorm\).*exclude=\{'0', '2'\}"):
        pln.convert(kept, 4, strict=True)
    assert type(kept[1]) is nn.LayerNorm, "a refused conversion changes nothing"


def test_a_multi_axis_layer_norm_is_skipped_unless_strict():
    model = nn.Sequential(nn.LayerNorm((4, 8)), nn.Flatten(), nn.LayerNorm(32))
    result = _quiet_convert(model, 8)
    assert [c.name for c in result] == ["2"]
    assert [s.name for s in result.skipped] == ["0"] and "last 2 axes" in result.skipped[0].reason
    with pytest.raises(pln.ConversionError, match=r"normalises over the last 2 axes"):
        pln.convert(nn.Sequential(nn.LayerNorm((4, 8))), 8, strict=True)


# ------------------------------------------------ containers ---

class NormHead(nn.Module):
    """A container named like a norm: its norm is converted, so it is not a skipped norm."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc(self.norm(x))


def test_containers_of_converted_norms_are_not_reported():
    model = nn.Sequential(nn.Linear(8, 16), NormHead())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = pln.convert(model, 8)
    assert [c.name for c in result] == ["1.norm"] and result.skipped == []


def test_timm_containers_are_not_reported():
    timm = _timm()
    model = timm.create_model("convnextv2_atto", pretrained=False, num_classes=5)
    result = _quiet_convert(model, "same")
    skipped = {type(s.module).__name__ for s in result.skipped}
    assert skipped == {"GlobalResponseNorm"}, skipped  # a norm over positions, reported for itself


# ------------------------------------------------ per-head norms ---

class PerHeadAttentionNorm(nn.Module):
    def __init__(self, norm, heads=4, head_dim=8):
        super().__init__()
        self.proj = nn.Linear(8, heads * head_dim)
        self.norm = norm
        self.shape = (heads, head_dim)

    def forward(self, x):
        return self.norm(self.proj(x).unflatten(-1, self.shape))


def test_per_head_norm_with_a_heads_by_head_dim_weight_converts_exactly():
    _transformers()
    from transformers.models.cohere.modeling_cohere import CohereLayerNorm
    model = PerHeadAttentionNorm(CohereLayerNorm(hidden_size=(4, 8), eps=1e-5))
    with torch.no_grad():
        model.norm.weight.copy_(torch.rand(4, 8) + 0.5)
    original = copy.deepcopy(model)
    result = pln.convert(model, "same")
    assert [c.name for c in result] == ["norm"] and result.skipped == []
    assert model.norm.num_per_group == 8 and model.norm.num_features == 32
    assert model.norm.weight.shape == (4, 8), "the state dict keeps the original's shapes"
    x = torch.randn(2, 3, 8)
    torch.testing.assert_close(model(x), original(x), atol=1e-6, rtol=1e-5)
    model.norm.load_state_dict(original.norm.state_dict())
    # Regrouped: groups of 4 within each head, as PLN over heads x head_dim.
    pln.convert(model, 4)
    h = model.proj(x)
    want = reference(h, 4, model.norm.weight.detach().reshape(-1)).unflatten(-1, (4, 8))
    torch.testing.assert_close(model(x), want, atol=1e-5, rtol=1e-5)


# ------------------------------------------------ state dicts ---

def test_pls_loads_an_rms_norm_state_dict_without_bias():
    _transformers()
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    theirs = randomise(LlamaRMSNorm(16, eps=1e-5))
    ours = pln.PLS(16, 16, layout="features_last")
    with torch.no_grad():
        ours.bias.fill_(3.0)  # a missing bias is no bias, not the one the module had
    ours.load_state_dict(theirs.state_dict())
    assert torch.equal(ours.weight, theirs.weight) and torch.equal(ours.bias, torch.zeros(16))
    x = torch.randn(3, 16)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-5)
    pln.PLS(16, 16).load_state_dict(RMSNorm(16).state_dict())
