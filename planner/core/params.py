"""Parameter counts from the architecture: a flat breakdown checked against published totals.

Counts follow the Hugging Face module layout (q/k/v/o projections, gate/up/down MLP, norms, embeddings, lm_head);
MoE counts all experts for memory (`total`) and only the routed top-k plus shared experts for compute (`active`).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.specs import ModelSpec


@dataclass(frozen=True)
class ParamCount:
    total: int
    active: int  # parameters a token touches (MoE: top-k routed + shared experts); equals total for dense models
    breakdown: dict[str, int]  # component -> parameters, summing to total
    embedding: int  # embedding + lm_head parameters (kept at 16 bits by GPTQ/AWQ)


def attention_params_per_layer(m: ModelSpec) -> int:
    """q, k, v, o projections (+ biases, qk-norms); MLA's low-rank projections for DeepSeek-V2."""
    h = m.hidden_size
    if m.is_mla:
        qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank:  # q = W_qb · norm(W_qa · x)
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * m.num_attention_heads * qk_head
        else:
            q = h * m.num_attention_heads * qk_head
        kv_a = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank  # down-projection + its RMSNorm
        kv_b = m.kv_lora_rank * m.num_attention_heads * (m.qk_nope_head_dim + m.v_head_dim)
        o = m.num_attention_heads * m.v_head_dim * h
        return q + kv_a + kv_b + o
    q_out = m.num_attention_heads * m.head_dim
    kv_out = m.num_kv_heads * m.head_dim
    weights = h * q_out + 2 * h * kv_out + q_out * h
    biases = (q_out + 2 * kv_out) * m.qkv_bias + h * m.o_bias
    qk_norm = 2 * m.head_dim * m.qk_norm
    return weights + biases + qk_norm


def mlp_params(m: ModelSpec, width: int) -> int:
    """One MLP of intermediate `width`: gate+up+down (gated) or up+down (plain), with optional biases."""
    h = m.hidden_size
    if m.mlp_kind == "gated":
        return 3 * h * width + (2 * width + h) * m.mlp_bias
    return 2 * h * width + (width + h) * m.mlp_bias


def norm_params_per_layer(m: ModelSpec) -> int:
    per_norm = m.hidden_size * (2 if m.norm_kind == "layer" else 1)
    return m.norms_per_layer * per_norm


def count_params(m: ModelSpec) -> ParamCount:
    """Total and active parameters with a per-component breakdown."""
    h, layers = m.hidden_size, m.num_layers
    moe_layers = layers - m.num_dense_layers if m.is_moe else 0
    dense_layers = layers - moe_layers
    embed = m.vocab_size * h
    lm_head = 0 if m.tie_word_embeddings else m.vocab_size * h
    final_norm = h * (2 if m.norm_kind == "layer" else 1)
    breakdown = {
        "embeddings": embed,
        "attention": layers * attention_params_per_layer(m),
        "mlp_dense": dense_layers * mlp_params(m, m.intermediate_size),
        "experts_routed": moe_layers * m.num_experts * mlp_params(m, m.moe_intermediate_size),
        "experts_shared": moe_layers * m.num_shared_experts * mlp_params(m, m.moe_intermediate_size),
        "router": moe_layers * h * m.num_experts,
        "norms": layers * norm_params_per_layer(m) + final_norm,
        "lm_head": lm_head,
    }
    total = sum(breakdown.values())
    inactive = moe_layers * (m.num_experts - m.num_experts_per_tok) * mlp_params(m, m.moe_intermediate_size)
    return ParamCount(total=total, active=total - inactive, breakdown=breakdown, embedding=embed + lm_head)
