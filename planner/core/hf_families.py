"""ModelSpec fields each architecture family spells its own way: sliding windows, the family's own keys, mixture of
experts, MLA, and the newer fields (layer kinds, MTP, Nemotron-H's blocks, DeepSeek-V4) (planner.core.hf_config)."""

from __future__ import annotations

from typing import Any

from planner.core.errors import InputError
from planner.core.hf_layers import layer_groups
from planner.core.hf_values import _count, _positive_int


def _sliding(cfg: dict, model_type: str, num_layers: int, source: str) -> tuple[int | None, int]:
    """(window, number of windowed layers) as each family uses it."""
    window = _count(cfg, "sliding_window", source)
    if not window or cfg.get("use_sliding_window") is False:
        return None, 0
    if model_type == "gemma2":
        return window, num_layers // 2  # Gemma-2 alternates local (windowed) and global layers
    return window, num_layers  # Mistral v0.1, Phi-3: every layer windowed


def _family_fields(cfg: dict, model_type: str, source: str) -> dict:
    """Fields that depend on the architecture family rather than on a shared key."""
    fields: dict[str, Any] = {}
    if model_type in ("falcon", "RefinedWebModel", "RefinedWeb"):
        new_arch = bool(cfg.get("new_decoder_architecture"))
        parallel = bool(cfg.get("parallel_attn", True))
        fields.update(
            mlp_kind="plain",
            norm_kind="layer",
            tie_word_embeddings=cfg.get("tie_word_embeddings", True),
            norms_per_layer=2 if (new_arch or not parallel) else 1,
            qkv_bias=bool(cfg.get("bias")),
            o_bias=bool(cfg.get("bias")),
            mlp_bias=bool(cfg.get("bias")),
        )
    elif model_type == "gemma2":
        fields.update(norms_per_layer=4, tie_word_embeddings=cfg.get("tie_word_embeddings", True))
    elif model_type == "qwen2":
        fields.update(qkv_bias=True)  # Qwen2 adds a bias to q, k and v projections
    elif model_type in ("qwen3", "qwen3_moe"):
        fields.update(qk_norm=True)
    if model_type not in ("falcon", "RefinedWebModel", "RefinedWeb", "qwen2"):
        fields.setdefault("qkv_bias", bool(cfg.get("attention_bias", False)))
        fields.setdefault("o_bias", bool(cfg.get("attention_bias", False)))
        fields.setdefault("mlp_bias", bool(cfg.get("mlp_bias", False)))
    return fields


def _moe_fields(cfg: dict, num_layers: int, source: str) -> dict:
    key = next((k for k in ("num_local_experts", "num_experts", "n_routed_experts") if cfg.get(k)), None)
    experts = _count(cfg, key, source) if key else 0
    if not experts:
        return {}
    fields = dict(
        num_experts=experts,
        num_experts_per_tok=_positive_int(
            cfg, "num_experts_per_tok", "experts_per_token", "top_k_experts", source=source
        ),
        num_shared_experts=_count(cfg, "n_shared_experts", source),
        num_dense_layers=_count(cfg, "first_k_dense_replace", source),
    )
    if cfg.get("n_group") and cfg.get("topk_group"):  # DeepSeek-V3's group-limited routing
        fields.update(
            num_expert_groups=_count(cfg, "n_group", source), topk_expert_groups=_count(cfg, "topk_group", source)
        )
    # Mixtral's experts use intermediate_size; Qwen3-MoE and DeepSeek name the expert width separately.
    fields["moe_intermediate_size"] = _positive_int(cfg, "moe_intermediate_size", "intermediate_size", source=source)
    if cfg.get("mlp_only_layers"):
        if not isinstance(cfg["mlp_only_layers"], list):
            raise InputError(f"{source}: mlp_only_layers", "must be a list of layer indices")
        fields["num_dense_layers"] = len(cfg["mlp_only_layers"])
    shared_width = next(
        (
            cfg[k]
            for k in ("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "share_expert_dim")
            if cfg.get(k)
        ),
        None,
    )
    if shared_width:  # Qwen3-Next/3.5, Nemotron-3, Step: a shared expert of its own width
        fields["shared_expert_intermediate_size"] = int(shared_width)
        fields["num_shared_experts"] = max(1, fields["num_shared_experts"])
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list):  # MiMo-V2-Flash: 1 = MoE layer, 0 = dense
        fields["num_dense_layers"] = sum(1 for f in freq[:num_layers] if not f)
    step = cfg.get("interleave_moe_layer_step") or cfg.get("decoder_sparse_step")
    if step and int(step) > 1:  # Llama-4 Maverick, Qwen2-MoE: every step-th layer is MoE
        fields["num_dense_layers"] = num_layers - num_layers // int(step)
    if cfg.get("model_type") in ("llama4", "llama4_text"):  # one shared expert of intermediate_size per MoE layer
        fields.update(num_shared_experts=1, dense_intermediate_size=_count(cfg, "intermediate_size_mlp", source))
    if cfg.get("enable_moe_block"):  # Gemma-4: a dense MLP beside the experts in every layer
        fields["dense_mlp_in_moe_layers"] = True
    if cfg.get("moe_latent_size"):
        fields["moe_latent_size"] = _count(cfg, "moe_latent_size", source)
    return fields


def _mla_fields(cfg: dict, source: str) -> dict:
    if not cfg.get("kv_lora_rank"):
        return {}
    return dict(
        kv_lora_rank=_positive_int(cfg, "kv_lora_rank", source=source),
        q_lora_rank=_count(cfg, "q_lora_rank", source),
        qk_rope_head_dim=_positive_int(cfg, "qk_rope_head_dim", source=source),
        qk_nope_head_dim=_positive_int(cfg, "qk_nope_head_dim", source=source),
        v_head_dim=_positive_int(cfg, "v_head_dim", source=source),
    )


def _newer_fields(cfg: dict, model_type: str, layers: int, source: str) -> dict:
    """Layer kinds, MTP, Nemotron-H's blocks, DeepSeek-V4's output projection: fields older families leave out."""
    fields: dict[str, Any] = {}
    groups = layer_groups(cfg, model_type, layers, source)
    if groups:
        fields["layer_groups"] = groups
    mtp = _count(cfg, "num_nextn_predict_layers", source) or _count(cfg, "mtp_num_hidden_layers", source)
    if mtp:
        fields["num_mtp_layers"] = mtp
        # DeepSeek's checkpoints store the MTP module's own embed_tokens and shared_head.head (layer 61)
        fields["mtp_shares_vocabulary"] = not model_type.startswith("deepseek")
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str):  # Nemotron-H: one mixer or one MLP per block, one norm per block, relu² MLPs
        fields.update(
            num_mlp_layers=pattern.count("-") + pattern.count("E"),
            num_dense_layers=pattern.count("-"),
            norms_per_layer=1,
            mlp_kind="plain",
        )
    if model_type == "gpt_oss":
        fields.update(mlp_bias=True, router_bias=True)
    if model_type == "deepseek_v4":
        fields.update(
            hyper_connections=_count(cfg, "hc_mult", source),
            o_lora_rank=_count(cfg, "o_lora_rank", source),
            o_groups=_count(cfg, "o_groups", source),
            q_lora_rank=_count(cfg, "q_lora_rank", source),
        )
    if model_type in ("qwen3_5", "qwen3_5_moe", "qwen3_next", "step3p7", "gemma4"):
        fields["qk_norm"] = True
    return fields
