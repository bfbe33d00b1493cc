"""Parameter counts from the architecture: a flat breakdown checked against published totals.

Counts follow the Hugging Face module layout (q/k/v/o projections, gate/up/down MLP, norms, embeddings, lm_head);
MoE counts all experts for memory (`total`) and only the routed top-k plus shared experts for compute (`active`).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.model_spec import LayerGroup, ModelSpec


@dataclass(frozen=True)
class ParamCount:
    """Parameters as served (`total`: what the engine loads: the language model and the vision tower the checkpoint
    carries; MTP layers are loaded only with speculative decoding) and as published (`checkpoint_total` adds them).

    Model cards count differently: DeepSeek's 685 B is the checkpoint with its MTP module (whose embed_tokens and
    shared head are stored again); OpenAI's gpt-oss "active" figure leaves the input embedding out
    (`active_without_input_embedding`); Llama-4's and Qwen3.5's totals include the vision encoder."""

    total: int
    active: int  # parameters a token touches (MoE: top-k routed + shared experts); equals total for dense models
    breakdown: dict[str, int]  # component -> parameters, summing to total
    embedding: int  # embedding + lm_head parameters (kept at 16 bits by GPTQ/AWQ)
    mtp: int = 0  # multi-token-prediction modules in the checkpoint (not in total)
    vision: int = 0  # vision tower + projector (in total; not in active: a text token does not touch it)
    input_embedding: int = 0  # the embedding matrix alone (a lookup, no multiply)

    @property
    def checkpoint_total(self) -> int:
        """Every parameter the published checkpoint stores: total + MTP modules."""
        return self.total + self.mtp

    @property
    def active_without_input_embedding(self) -> int:
        """Active parameters as OpenAI counts them for gpt-oss: the embedding lookup is not a matmul."""
        return self.active - self.input_embedding


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


def group_mixer_params(m: ModelSpec, g: LayerGroup) -> int:
    """Token-mixing parameters of one layer of group `g`: attention projections (GQA, MLA, DeepSeek-V4's shared
    K=V head with grouped low-rank output), a DSA indexer, Gated DeltaNet or Mamba-2."""
    h = m.hidden_size
    if g.kind == "linear":  # Qwen3-Next GatedDeltaNet: in_proj_qkvz, in_proj_ba, conv1d, dt_bias, A_log, norm, out
        key, value = g.num_groups * g.state_key_dim, g.state_heads * g.state_value_dim
        return (
            h * (2 * key + 2 * value + 2 * g.state_heads)
            + g.conv_channels * g.conv_kernel
            + 2 * g.state_heads
            + (g.state_value_dim + value * h)
        )
    if g.kind == "mamba":  # Mamba-2 mixer: in_proj (z, x, B, C, dt), conv1d (+bias), dt_bias, A_log, D, norm, out
        inner = g.state_heads * g.state_value_dim
        in_proj = h * (2 * inner + 2 * g.num_groups * g.state_key_dim + g.state_heads)
        return in_proj + g.conv_channels * (g.conv_kernel + 1) + 3 * g.state_heads + inner + inner * h
    indexer = 0
    if g.indexer_head_dim:  # wq_b from the q latent, wk + LayerNorm, per-head weights
        q_in = m.q_lora_rank or h
        indexer = (
            q_in * g.indexer_heads * g.indexer_head_dim + h * g.indexer_head_dim + 2 * g.indexer_head_dim
        ) + h * g.indexer_heads
    if g.latent_dim and g.kv_shared:  # DeepSeek-V4: q low-rank, one K=V head, grouped low-rank output
        heads_out = g.num_heads * g.latent_dim
        q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * heads_out if m.q_lora_rank else h * heads_out
        kv = h * g.latent_dim + g.latent_dim
        o = heads_out * m.o_lora_rank + m.o_groups * m.o_lora_rank * h if m.o_lora_rank else heads_out * h
        return q + kv + o + g.num_heads * g.sinks + indexer
    if g.latent_dim:
        return attention_params_per_layer(m) + indexer
    v_dim = g.v_head_dim or g.head_dim
    q_out = g.num_heads * g.head_dim * (2 if g.output_gate else 1)
    kv_out = g.num_kv_heads * (g.head_dim + (0 if g.kv_shared else v_dim))
    o_in = g.num_heads * v_dim
    biases = (q_out + kv_out) * m.qkv_bias + h * m.o_bias
    return h * (q_out + kv_out) + o_in * h + biases + 2 * g.head_dim * m.qk_norm + g.num_heads * g.sinks + indexer


def mixer_params(m: ModelSpec) -> int:
    """Token-mixing parameters of all layers (a group that re-caches layers of another group adds no weights)."""
    if not m.layer_groups:
        return m.num_layers * attention_params_per_layer(m)
    return sum(g.count * group_mixer_params(m, g) for g in m.layer_groups if not g.shares_layers)


def expert_params(m: ModelSpec, width: int) -> int:
    """One expert of `width`; Nemotron-3's experts run in moe_latent_size instead of the hidden width."""
    if m.moe_latent_size:
        return mlp_params(m, width, m.moe_latent_size)
    return mlp_params(m, width)


def mlp_params(m: ModelSpec, width: int, model_width: int | None = None) -> int:
    """One MLP of intermediate `width`: gate+up+down (gated) or up+down (plain), with optional biases."""
    h = model_width or m.hidden_size
    if m.mlp_kind == "gated":
        return 3 * h * width + (2 * width + h) * m.mlp_bias
    return 2 * h * width + (width + h) * m.mlp_bias


def norm_params_per_layer(m: ModelSpec) -> int:
    per_norm = m.hidden_size * (2 if m.norm_kind == "layer" else 1)
    return m.norms_per_layer * per_norm


def count_params(m: ModelSpec) -> ParamCount:
    """Total and active parameters with a per-component breakdown."""
    h, layers = m.hidden_size, m.num_layers
    mlp_layers = m.mlp_layers
    moe_layers = mlp_layers - m.num_dense_layers if m.is_moe else 0
    dense_layers = mlp_layers - moe_layers + (moe_layers if m.dense_mlp_in_moe_layers else 0)
    embed = m.vocab_size * h
    lm_head = 0 if m.tie_word_embeddings else m.vocab_size * h
    final_norm = h * (2 if m.norm_kind == "layer" else 1)
    expert = expert_params(m, m.moe_intermediate_size) if m.is_moe else 0
    shared = mlp_params(m, m.shared_expert_intermediate_size or m.moe_intermediate_size)
    latent_proj = 2 * h * m.moe_latent_size  # Nemotron-3: hidden -> latent before the experts, latent -> hidden after
    breakdown = {
        "embeddings": embed,
        "attention": mixer_params(m),
        "mlp_dense": dense_layers * mlp_params(m, m.dense_intermediate_size or m.intermediate_size),
        "experts_routed": moe_layers * m.num_experts * expert,
        "experts_shared": moe_layers * (m.num_shared_experts * shared + latent_proj),
        "router": moe_layers * (h * m.num_experts + m.num_experts * m.router_bias),
        "norms": layers * norm_params_per_layer(m) + final_norm,
        "lm_head": lm_head,
    }
    if m.vision_params:
        breakdown["vision"] = m.vision_params
    total = sum(breakdown.values())
    inactive = moe_layers * (m.num_experts - m.num_experts_per_tok) * expert + m.vision_params
    return ParamCount(
        total=total,
        active=total - inactive,
        breakdown=breakdown,
        embedding=embed + lm_head,
        mtp=mtp_params(m),
        vision=m.vision_params,
        input_embedding=embed,
    )


def mtp_params(m: ModelSpec) -> int:
    """Multi-token-prediction modules: each one decoder layer (the model's full-attention geometry and its MoE or
    dense MLP) + eh_proj (2h -> h) + enorm, hnorm and the final norm; DeepSeek's checkpoints also store the module's
    embedding and output head again (DeepSeek-V3 README: 671 B main model + 14 B MTP module = 685 B)."""
    if not m.num_mtp_layers:
        return 0
    h = m.hidden_size
    attention_groups = [g for g in m.layer_groups if g.caches_tokens and not g.shares_layers]
    full = next((g for g in attention_groups if g.kind == "full"), attention_groups[0] if attention_groups else None)
    mixer = group_mixer_params(m, full) if full else attention_params_per_layer(m)
    if m.is_moe:
        shared = mlp_params(m, m.shared_expert_intermediate_size or m.moe_intermediate_size)
        mlp = m.num_experts * expert_params(m, m.moe_intermediate_size) + m.num_shared_experts * shared
        mlp += h * m.num_experts + 2 * h * m.moe_latent_size
    else:
        mlp = mlp_params(m, m.intermediate_size)
    vocab = 0 if m.mtp_shares_vocabulary else m.vocab_size * h * (1 if m.tie_word_embeddings else 2)
    per_module = mixer + mlp + 2 * h * h + 3 * h + norm_params_per_layer(m)
    return m.num_mtp_layers * per_module + vocab
