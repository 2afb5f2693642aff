"""Small random models (nothing downloaded) of every transformers family whose
mixers carry a gated norm, for test_gated_families.py: two layers of width 32,
one of each kind the family mixes (an SSM or linear-attention mixer and an
attention layer), so that every norm class of the family appears."""
import torch
import transformers as T

V = 64
TOKENS = dict(vocab_size=V, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def _lm(name, **kw):
    return getattr(T, name + "ForCausalLM")(getattr(T, name + "Config")(**TOKENS, **kw))


def mamba2():
    return _lm("Mamba2", hidden_size=32, num_hidden_layers=2, num_heads=4, head_dim=16, state_size=8, n_groups=2,
               expand=2, conv_kernel=4, chunk_size=8)


MAMBA = dict(mamba_n_heads=4, mamba_d_head=16, mamba_n_groups=2, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2,
             mamba_chunk_size=8)
ATTN = dict(hidden_size=32, intermediate_size=64, num_attention_heads=2, num_key_value_heads=1)


def bamba():
    return _lm("Bamba", num_hidden_layers=2, attn_layer_indices=[1], **ATTN, **MAMBA)


def falcon_h1():
    return _lm("FalconH1", num_hidden_layers=2, mamba_d_ssm=64, mamba_rms_norm=True, **ATTN, **MAMBA)


def granitemoehybrid():
    return _lm("GraniteMoeHybrid", num_hidden_layers=2, layer_types=["mamba", "attention"], num_local_experts=2,
               num_experts_per_tok=1, shared_intermediate_size=32, **ATTN, **MAMBA)


def zamba2():
    return _lm("Zamba2", hidden_size=32, num_hidden_layers=2, layers_block_type=["mamba", "hybrid"], mamba_d_state=8,
               mamba_d_conv=4, mamba_expand=2, mamba_ngroups=2, n_mamba_heads=4, chunk_size=8, intermediate_size=64,
               num_attention_heads=2, num_key_value_heads=2, num_mem_blocks=1, use_mamba_kernels=False)


def nemotron_h():
    return _lm("NemotronH", hidden_size=32, layers_block_type=["mamba", "attention"], num_attention_heads=2,
               num_key_value_heads=1, head_dim=16, intermediate_size=64, ssm_state_size=8, mamba_num_heads=4,
               mamba_head_dim=16, n_groups=2, conv_kernel=4, expand=2, chunk_size=8, use_mamba_kernels=False)


def qwen3_next():
    return _lm("Qwen3Next", **ATTN, num_hidden_layers=2, head_dim=16, linear_num_value_heads=2,
               linear_num_key_heads=1, linear_key_head_dim=16, linear_value_head_dim=16, num_experts=2,
               num_experts_per_tok=1, moe_intermediate_size=32, shared_expert_intermediate_size=32,
               mlp_only_layers=[0, 1], layer_types=["linear_attention", "full_attention"])


def olmo_hybrid():
    return _lm("OlmoHybrid", **ATTN, num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
               linear_num_key_heads=1, linear_num_value_heads=2, linear_key_head_dim=16, linear_value_head_dim=16)


def kimi_linear():
    return _lm("KimiLinear", hidden_size=32, intermediate_size=64, num_attention_heads=2, num_key_value_heads=2,
               num_hidden_layers=2, moe_intermediate_size=32, num_local_experts=2,
               num_experts_per_tok=1, n_shared_experts=1, kv_lora_rank=16, q_lora_rank=None, qk_rope_head_dim=8,
               v_head_dim=16, qk_nope_head_dim=16, layer_types=["linear_attention", "full_attention"],
               mlp_layer_types=["dense", "sparse"], linear_head_dim=16, linear_num_heads=2)


def bailing_hybrid():
    return _lm("BailingHybrid", hidden_size=32, intermediate_size=64, num_attention_heads=2, num_key_value_heads=2,
               num_hidden_layers=2, moe_intermediate_size=32, num_local_experts=2,
               num_experts_per_tok=1, n_shared_experts=1, kv_lora_rank=16, qk_rope_head_dim=8, v_head_dim=16,
               qk_nope_head_dim=16, head_dim=16, layer_types=["linear_attention", "full_attention"],
               mlp_layer_types=["dense", "sparse"], first_k_dense_replace=1, layer_group_size=2, n_group=1,
               topk_group=1)


def _text(name, **kw):
    return getattr(T, name + "ForCausalLM")(getattr(T, name + "TextConfig")(**TOKENS, **kw))


def qwen3_5():
    return _text("Qwen3_5", **ATTN, num_hidden_layers=2, head_dim=16, linear_num_value_heads=2,
                 linear_num_key_heads=1, linear_key_head_dim=16, linear_value_head_dim=16,
                 layer_types=["linear_attention", "full_attention"])


def qwen3_5_moe():
    return _text("Qwen3_5Moe", hidden_size=32, num_attention_heads=2, num_key_value_heads=1, num_hidden_layers=2,
                 head_dim=16, linear_num_value_heads=2, linear_num_key_heads=1, linear_key_head_dim=16,
                 linear_value_head_dim=16, num_experts=2, num_experts_per_tok=1, moe_intermediate_size=32,
                 shared_expert_intermediate_size=32, layer_types=["linear_attention", "full_attention"])


class _Output:
    def __init__(self, logits, past_key_values):
        self.logits, self.past_key_values = logits, past_key_values


class _Hidden(torch.nn.Module):
    """A text model without an LM head: its last hidden state stands for the logits."""
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, **kw):
        out = self.model(ids, **kw)
        return _Output(out.last_hidden_state, getattr(out, "past_key_values", None))


def glm5_next():
    cfg = T.Glm5NextTextConfig(**TOKENS, hidden_size=32, intermediate_size=64, moe_intermediate_size=32, num_hidden_layers=2,
                               num_attention_heads=2, num_key_value_heads=2, n_shared_experts=1, n_routed_experts=2,
                               num_experts_per_tok=1, n_group=1, topk_group=1, kv_lora_rank=16, q_lora_rank=16,
                               qk_rope_head_dim=0, v_head_dim=16, qk_nope_head_dim=16, head_dim=16,
                               layer_types=["linear_attention", "full_attention"], mlp_layer_types=["dense", "sparse"],
                               linear_head_dim=16, linear_num_heads=2, index_head_dim=16, index_n_heads=2,
                               index_topk=16)
    return _Hidden(T.Glm5NextTextModel(cfg))


#: Gate before the norm (Mamba-2's form), then after it (Gated DeltaNet's, Kimi Delta Attention's).
FAMILIES = {f.__name__: f for f in (mamba2, bamba, falcon_h1, granitemoehybrid, nemotron_h, zamba2, qwen3_next,
                                    qwen3_5, qwen3_5_moe, olmo_hybrid, kimi_linear, bailing_hybrid, glm5_next)}
