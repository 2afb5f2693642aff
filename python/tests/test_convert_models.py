"""pln.convert on small random models of 18 architectures the other suites do
not use (13 of transformers, 5 of timm, built from configs: nothing is
downloaded): at each module's own grouping (``"same"``) the converted model
gives the original's output.

Run as a script, it prints the largest difference per model:

    PLN_LIBRARY=... python python/tests/test_convert_models.py
"""
import copy
import sys
import warnings
from pathlib import Path

import pytest
import torch

if __name__ == "__main__":  # as a script: the package and helpers beside the tests, as conftest.py does
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

import pln

# Largest difference allowed, relative to the output's largest value: float32
# rounding through a few layers (the differences seen are below 1e-6).
TOLERANCE = 1e-5
SMALL = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=2, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def _ids(n=6):
    return torch.randint(0, SMALL["vocab_size"], (2, n), generator=torch.Generator().manual_seed(1))


def _causal_lm(config_name, model_name, **config):
    """(model, inputs, read the output, convert's keywords) of a transformers causal LM."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv)")
    if not hasattr(transformers, config_name) or not hasattr(transformers, model_name):
        pytest.skip(f"this transformers ({transformers.__version__}) has no {model_name}")
    model = getattr(transformers, model_name)(getattr(transformers, config_name)(**config))
    return model, {"input_ids": _ids()}, lambda out: out.logits


def gemma3():
    return _causal_lm("Gemma3TextConfig", "Gemma3ForCausalLM", **SMALL, head_dim=16)


def cohere():  # with its per-head query and key norms, weights [heads, head_dim]
    return _causal_lm("CohereConfig", "CohereForCausalLM", **SMALL, use_qk_norm=True)


def olmo():  # LayerNorms without parameters or an epsilon of their own: 1e-5 inside forward
    return _causal_lm("OlmoConfig", "OlmoForCausalLM", **SMALL) + ({"eps": 1e-5},)


def olmo2():
    return _causal_lm("Olmo2Config", "Olmo2ForCausalLM", **SMALL)


def phi3():
    return _causal_lm("Phi3Config", "Phi3ForCausalLM", **SMALL)


def mistral():
    return _causal_lm("MistralConfig", "MistralForCausalLM", **SMALL)


def qwen3():
    return _causal_lm("Qwen3Config", "Qwen3ForCausalLM", **SMALL, head_dim=16)


def deepseek_v3():
    return _causal_lm("DeepseekV3Config", "DeepseekV3ForCausalLM", **SMALL, moe_intermediate_size=16,
                      n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1, kv_lora_rank=16,
                      q_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8)


def mamba():
    return _causal_lm("MambaConfig", "MambaForCausalLM", vocab_size=64, hidden_size=32, state_size=8,
                      num_hidden_layers=1, expand=2, conv_kernel=4, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def jamba():  # one Mamba layer and one attention layer with experts
    return _causal_lm("JambaConfig", "JambaForCausalLM", **dict(SMALL, num_hidden_layers=2), num_experts=2,
                      num_experts_per_tok=1, expert_layer_period=2, expert_layer_offset=1, attn_layer_period=2,
                      attn_layer_offset=1, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=4)


def lfm2():  # one short-convolution layer and one attention layer
    return _causal_lm("Lfm2Config", "Lfm2ForCausalLM", **dict(SMALL, num_hidden_layers=2),
                      layer_types=["conv", "full_attention"])


def whisper():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv)")
    config = transformers.WhisperConfig(vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1,
                                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                                        decoder_ffn_dim=64, num_mel_bins=8, max_source_positions=8,
                                        max_target_positions=16, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                        decoder_start_token_id=1)
    features = torch.randn(2, 8, 16, generator=torch.Generator().manual_seed(1))
    return (transformers.WhisperModel(config), {"input_features": features, "decoder_input_ids": _ids(4)},
            lambda out: out.last_hidden_state)


def clip():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (scripts/venv)")
    layers = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    text = dict(layers, vocab_size=64, max_position_embeddings=16, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    config = transformers.CLIPConfig(text_config=text,
                                     vision_config=dict(layers, image_size=32, patch_size=8), projection_dim=16)
    pixels = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    return (transformers.CLIPModel(config), {"input_ids": _ids(), "pixel_values": pixels},
            lambda out: torch.cat([out.text_embeds, out.image_embeds]))


def _timm_model(name, size, **kw):
    timm = pytest.importorskip("timm", reason="timm is not installed (scripts/venv installs it)")
    model = timm.create_model(name, pretrained=False, num_classes=5, **kw) if isinstance(name, str) else name(timm)
    images = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(1))
    return model, {"x": images}, lambda out: out


def convnext_atto():
    return _timm_model("convnext_atto", 32)


def convnextv2_atto():
    return _timm_model("convnextv2_atto", 32)


def poolformerv2():  # poolformerv2_s12's blocks, fewer and narrower; its norms are GroupNorm with one group
    def build(timm):
        from timm.models.metaformer import GroupNorm1NoBias, MetaFormer
        return MetaFormer(depths=(1, 1, 1, 1), dims=(16, 16, 32, 32), norm_layers=GroupNorm1NoBias,
                          use_mlp_head=False, num_classes=5)
    return _timm_model(build, 32)


def swin():
    return _timm_model("swin_tiny_patch4_window7_224", 64, img_size=64, window_size=2, embed_dim=16,
                       depths=(1, 1, 1, 1), num_heads=(1, 1, 2, 2))


def vit_rms_norm():
    return _timm_model(lambda timm: timm.models.VisionTransformer(
        img_size=32, patch_size=8, embed_dim=32, depth=1, num_heads=2, num_classes=5,
        norm_layer=timm.layers.RmsNorm), 32)


MODELS = [gemma3, cohere, olmo, olmo2, phi3, mistral, qwen3, deepseek_v3, mamba, jamba, lfm2, whisper, clip,
          convnext_atto, convnextv2_atto, poolformerv2, swin, vit_rms_norm]


def _randomise_norms(model, seed=0):
    """Norm weights away from their initial ones and zero (Gemma's start at 0), so that each matters."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if "norm" in type(module).__name__.lower() and not list(module.children()):
                for p in module.parameters(recurse=False):
                    p.copy_(torch.rand(p.shape, generator=gen) + 0.5)


def convert_and_compare(build):
    """The conversion at each module's own grouping and the largest difference of
    the outputs, relative to the largest output."""
    model, inputs, output, *kw = build()
    torch.manual_seed(0)
    model.eval()
    _randomise_norms(model)
    original = copy.deepcopy(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what is left alone is in result.skipped, checked below
        result = pln.convert(model, "same", **(kw[0] if kw else {}))
    with torch.no_grad():
        want, got = output(original(**inputs)), output(model(**inputs))
    difference = float((got.double() - want.double()).abs().max() / want.double().abs().max())
    return result, difference


@pytest.mark.parametrize("build", MODELS, ids=[b.__name__ for b in MODELS])
def test_converted_model_gives_the_original_output(build):
    result, difference = convert_and_compare(build)
    print(f"{build.__name__}: {len(result)} replaced, largest difference {difference:.2g}")
    assert result, "nothing converted"
    # Left alone only what PLN cannot stand for: norms over positions (poolformer's GroupNorm
    # with one group, ConvNeXt-V2's GlobalResponseNorm).
    over_positions = [s for s in result.skipped
                      if isinstance(s.module, torch.nn.GroupNorm) or type(s.module).__name__ == "GlobalResponseNorm"]
    assert over_positions == result.skipped, [(s.name, s.reason) for s in result.skipped]
    assert difference <= TOLERANCE


if __name__ == "__main__":
    for build in MODELS:
        try:
            result, difference = convert_and_compare(build)
        except pytest.skip.Exception as skip:
            print(f"{build.__name__:16} skipped: {skip}")
            continue
        left = sorted({type(s.module).__name__ for s in result.skipped})
        print(f"{build.__name__:16} {len(result):3} replaced  largest difference {difference:.2g}"
              + (f"  left alone: {', '.join(left)}" if left else ""))
