"""Build a ModelSpec from a Hugging Face `config.json` (Llama, Mistral, Qwen2/3, Gemma-2, Phi-3, Mixtral,
Qwen3-MoE, DeepSeek-V2/V3 MLA, Falcon with its old RefinedWeb keys), and today's open models: multimodal wrappers
(the text model under `text_config`, the vision tower counted from `vision_config`), per-layer attention kinds
(planner.core.hf_layers), MTP layers, shared experts, dense-first and interleaved MoE, and checkpoints published in
MXFP4 / NVFP4 / block-scaled FP8 (`quantization_config`, `hf_quant_config.json`).

Each family spells the same quantity differently; `_first` reads the first key present so that a missing field
is reported by its Hugging Face name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.core.errors import InputError, from_validation_error
from planner.core.hf_layers import layer_groups
from planner.core.json_input import load_json
from planner.core.specs import ModelSpec

MAX_CONFIG_BYTES = 1_000_000
MAX_DIMENSION = 10**9  # no real layer count, width, vocabulary or context comes near this
SPEC_KEY = "servingplan_model_spec"  # a real config.json is a few KB; anything larger is not one


def _first(cfg: dict, *keys: str, default: Any = ..., source: str = "config.json") -> Any:
    for key in keys:
        if key in cfg and cfg[key] is not None:
            return cfg[key]
    if default is ...:
        raise InputError(f"{source}: {keys[0]}", "missing (required to size the model)")
    return default


def _show(value: Any) -> str:
    """A value for an error message, cut short (a hostile file can hold megabytes in one field)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _whole(value: Any, minimum: int) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and minimum <= value <= MAX_DIMENSION  # first: compares 10^400 exactly (isfinite would overflow), NaN fails
        and value == int(value)
    )


def _positive_int(cfg: dict, *keys: str, default: Any = ..., source: str = "config.json") -> int:
    value = _first(cfg, *keys, default=default, source=source)
    if not _whole(value, 1):
        key = next((k for k in keys if k in cfg and cfg[k] is not None), keys[0])
        raise InputError(f"{source}: {key}", f"must be a whole number from 1 to {MAX_DIMENSION:,}, got {_show(value)}")
    return int(value)


# vLLM's keys for a model's length, smallest first wins (vllm/config.py _get_and_verify_max_len at 2ac6d0e, the
# default max_model_len; later vLLM moved it to ModelArchConfig.derived_max_model_len_and_key unchanged)
CONTEXT_KEYS = (
    "max_position_embeddings",  # OPT, Llama and most
    "n_positions",  # GPT-2
    "max_seq_len",  # MPT
    "seq_length",  # ChatGLM2
    "model_max_length",  # Command-R
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
ROPE_KEEPS_LENGTH = ("su", "longrope", "llama3")  # rope types whose factor vLLM does not apply to the length


def context_window(cfg: dict, source: str = "config.json") -> int:
    """The model's context window as vLLM derives its default max_model_len from config.json: the smallest of
    CONTEXT_KEYS present (2,048 when none is), times rope_scaling's factor unless the rope type keeps the length
    (yarn: original_max_position_embeddings × factor). Presets agree with max_position_embeddings (DeepSeek-V3's
    yarn: 4,096 × 40 = 163,840; gpt-oss: 4,096 × 32 = 131,072; Llama-3.1's llama3 rope: 131,072 as given)."""
    present = [(key, _positive_int(cfg, key, source=source)) for key in CONTEXT_KEYS if cfg.get(key) is not None]
    window = min((v for _, v in present), default=2048)
    rope = cfg.get("rope_scaling")
    if isinstance(rope, dict):
        kind = rope.get("rope_type") or rope.get("type")
        if kind not in ROPE_KEEPS_LENGTH:
            factor = rope.get("factor", 1.0)
            if not isinstance(factor, (int, float)) or isinstance(factor, bool) or not 0 < factor <= MAX_DIMENSION:
                raise InputError(f"{source}: rope_scaling.factor", f"must be a positive number, got {_show(factor)}")
            if kind == "yarn" and rope.get("original_max_position_embeddings") is not None:
                window = _positive_int(rope, "original_max_position_embeddings", source=f"{source}: rope_scaling")
            window = int(window * factor)
    if not _whole(window, 1):
        raise InputError(f"{source}: max_position_embeddings", f"the context window {_show(window)} is out of range")
    return window


def _count(cfg: dict, key: str, source: str) -> int:
    """An optional non-negative whole number (0 when absent or null)."""
    value = cfg.get(key)
    if value is None or value is False:
        return 0
    if not _whole(value, 0):
        raise InputError(f"{source}: {key}", f"must be a whole number from 0 to {MAX_DIMENSION:,}, got {_show(value)}")
    return int(value)


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


def _quant_fields(cfg: dict) -> dict:
    """The checkpoint's weight format from quantization_config (fp8, AWQ/GPTQ 4- or 8-bit, MXFP4); {} when 16-bit.

    gpt-oss: quant_method mxfp4 with modules_to_not_convert naming attention, router, embeddings and lm_head: the
    experts are MXFP4 and the rest stays BF16. DeepSeek-V4 states `expert_dtype: fp4` beside its FP8 config."""
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return {}
    method, bits = str(q.get("quant_method", "")).lower(), q.get("bits")
    if method == "mxfp4":
        return {
            "quantized_weights": "mxfp4",
            "quantized_groups": {"experts": "mxfp4", "attention": "bf16", "dense": "bf16"},
        }
    fmt = {("fp8", None): "fp8", ("awq", 4): "awq-int4", ("gptq", 4): "gptq-int4", ("gptq", 8): "gptq-int8"}.get(
        (method, bits if method in ("awq", "gptq") else None)
    )
    if fmt and str(cfg.get("expert_dtype", "")).lower() == "fp4":
        return {"quantized_weights": fmt, "quantized_groups": {"experts": "mxfp4"}}
    return {"quantized_weights": fmt} if fmt else {}


def hf_quant_fields(quant: dict, source: str = "hf_quant_config.json") -> dict:
    """A ModelOpt `hf_quant_config.json`: quant_algo NVFP4 / FP8 sets the linear layers' format, kv_cache_quant_algo
    FP8 the KV cache; excluded modules (attention projections in NVIDIA's DeepSeek NVFP4) stay at the base format."""
    q = quant.get("quantization") if isinstance(quant, dict) else None
    if not isinstance(q, dict):
        raise InputError(f"{source}: quantization", "missing (a ModelOpt hf_quant_config.json has it)")
    algo = str(q.get("quant_algo", "")).upper()
    fmt = {"NVFP4": "nvfp4", "FP8": "fp8", "MXFP4": "mxfp4", "W4A8_MXFP4_FP8": "mxfp4"}.get(algo)
    if fmt is None:
        raise InputError(f"{source}: quant_algo", f"unknown ModelOpt format {algo!r}; known: NVFP4 FP8 MXFP4")
    fields: dict[str, Any] = {"quantized_weights": fmt}
    excluded = q.get("exclude_modules") or []
    if fmt == "nvfp4" and any("self_attn" in str(m) for m in excluded):
        fields["quantized_groups"] = {"experts": "nvfp4", "dense": "nvfp4", "attention": "bf16"}
    if str(q.get("kv_cache_quant_algo", "")).upper() == "FP8":
        fields["kv_cache_quant"] = "fp8"
    return fields


def _vision_params(vc: dict) -> int:
    """Vision tower + projector from vision_config (a ViT of `depth` blocks: qkv+proj and a 2-matrix MLP with biases,
    two LayerNorms; patch embedding; learned positions; Qwen-VL's patch merger or a projection to the text width)."""
    h = int(vc.get("hidden_size") or 0)
    depth = int(vc.get("depth") or vc.get("num_hidden_layers") or 0)
    if not h or not depth:
        return 0
    inner = int(vc.get("intermediate_size") or 4 * h)
    block = 4 * h * h + 4 * h + 2 * h * inner + inner + h + 4 * h
    patch = int(vc.get("patch_size") or 14)
    embed = int(vc.get("in_channels") or vc.get("num_channels") or 3) * int(vc.get("temporal_patch_size") or 1)
    embed = embed * patch * patch * h + h
    positions = int(vc.get("num_position_embeddings") or vc.get("position_embedding_size") or 0) * h
    out = int(vc.get("out_hidden_size") or 0)
    merge = int(vc.get("spatial_merge_size") or 0)
    if out and merge:  # Qwen-VL merger: LayerNorm, then merged → merged → text width
        merged = h * merge * merge
        projector = 2 * h + merged * merged + merged + merged * out + out
    else:
        projector = 0
    return depth * block + embed + positions + projector


def _text_and_vision(cfg: dict) -> tuple[dict, int]:
    """A multimodal wrapper's text config (its own keys over the wrapper's), and the vision tower's parameters."""
    text = cfg.get("text_config")
    if not isinstance(text, dict):
        return cfg, 0
    merged = {k: v for k, v in cfg.items() if k not in ("text_config", "vision_config", "audio_config")}
    merged.update({k: v for k, v in text.items() if v is not None})
    merged["model_type"] = str(cfg.get("model_type") or text.get("model_type"))
    merged.setdefault("torch_dtype", text.get("dtype") or cfg.get("dtype"))
    if "tie_word_embeddings" in cfg and "tie_word_embeddings" not in text:
        merged["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    vision = cfg.get("vision_config")
    return merged, _vision_params(vision) if isinstance(vision, dict) else 0


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


def model_from_hf_config(cfg: dict, name: str | None = None, source: str = "config.json") -> ModelSpec:
    """ModelSpec from a parsed config.json; InputError names the missing or bad key."""
    if not isinstance(cfg, dict):
        raise InputError(source, "must be a JSON object (the contents of a Hugging Face config.json)")
    cfg, vision = _text_and_vision(cfg)
    model_type = str(cfg.get("model_type") or "llama")
    hidden = _positive_int(cfg, "hidden_size", "n_embd", "d_model", source=source)
    layers = _positive_int(cfg, "num_hidden_layers", "n_layer", "num_layers", source=source)
    heads = _positive_int(cfg, "num_attention_heads", "n_head", source=source)
    if cfg.get("multi_query") and not cfg.get("new_decoder_architecture"):
        kv_heads = 1  # Falcon-7B's multi-query attention
    else:
        kv_heads = _positive_int(cfg, "num_key_value_heads", "num_kv_heads", "n_head_kv", default=heads, source=source)
    default_ffn = 4 * hidden if model_type in ("falcon", "RefinedWebModel", "RefinedWeb") else ...
    window, sliding_layers = _sliding(cfg, model_type, layers, source)
    fields = dict(
        name=name or str(cfg.get("_name_or_path") or model_type),
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=_positive_int(cfg, "head_dim", "attention_head_dim", default=hidden // heads, source=source),
        intermediate_size=_positive_int(
            cfg,
            "intermediate_size",
            "ffn_hidden_size",
            "n_inner",
            "moe_intermediate_size",
            default=default_ffn,
            source=source,
        ),
        vocab_size=_positive_int(cfg, "vocab_size", source=source),
        max_position_embeddings=context_window(cfg, source),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        torch_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"),
        sliding_window=window,
        num_sliding_layers=sliding_layers,
    )
    fields.update(_family_fields(cfg, model_type, source))
    fields.update(_moe_fields(cfg, layers, source))
    fields.update(_mla_fields(cfg, source))
    fields.update(_quant_fields(cfg))
    fields.update(_newer_fields(cfg, model_type, layers, source))
    sliding = [g for g in fields.get("layer_groups", ()) if g.kind == "sliding" and not g.shares_layers]
    if fields.get("layer_groups"):  # the legacy window fields follow the groups (gpt-oss: 18 of 36 layers)
        fields.update(
            sliding_window=sliding[0].window if sliding else None, num_sliding_layers=sliding[0].count if sliding else 0
        )
    if vision:
        fields["vision_params"] = vision
    try:
        return ModelSpec(**fields)
    except ValidationError as err:
        raise from_validation_error(err, prefix=f"{source}: ") from None


def parse_config_text(text: str | bytes, name: str | None = None, source: str = "config.json") -> ModelSpec:
    """ModelSpec from config.json text (an upload or a paste), with size and syntax checked first."""
    if len(text) > MAX_CONFIG_BYTES:  # checked before parsing: never decode an oversized upload
        raise InputError(source, f"file is {len(text):,} bytes; a config.json is at most {MAX_CONFIG_BYTES:,}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")  # a byte-order mark is harmless
        except UnicodeDecodeError:
            raise InputError(source, "is not UTF-8 text (is it a binary file?)") from None
    cfg = load_json(
        text, source, check_ints=False, constants_as_words=True
    )  # finite floats, bounded depth; ints: _whole
    if isinstance(cfg, dict) and isinstance(cfg.get(SPEC_KEY), dict):  # a servingplan model spec (shared links)
        try:
            return ModelSpec(**cfg[SPEC_KEY])
        except ValidationError as err:
            raise from_validation_error(err, prefix=f"{source}: ") from None
    return model_from_hf_config(cfg, name=name, source=source)


def spec_document(spec: ModelSpec) -> str:
    """A ModelSpec as a document parse_config_text reads back exactly (used to restore shared custom models)."""
    return json.dumps({SPEC_KEY: spec.model_dump()}, indent=1)


def load_config_file(path: str | Path, name: str | None = None) -> ModelSpec:
    """ModelSpec from a config.json on disk."""
    path = Path(path)
    try:
        if not path.is_file():
            raise InputError("model", f"{path} is not a regular file")
        with path.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)  # never read more than the cap (think /dev/zero)
        if len(data) > MAX_CONFIG_BYTES:  # only the cap + 1 was read: say the file's own size
            size = path.stat().st_size
            raise InputError(path.name, f"file is {size:,} bytes; a config.json is at most {MAX_CONFIG_BYTES:,}")
    except OSError as err:
        raise InputError("model", f"cannot read {path}: {err.strerror}") from None
    spec = parse_config_text(data, name=name or path.stem, source=path.name)
    # a ModelOpt checkpoint keeps its format in hf_quant_config.json beside config.json (data/models: <stem>.hf_quant_…)
    for quant_path in (path.with_name(path.stem + ".hf_quant_config.json"), path.with_name("hf_quant_config.json")):
        if path.name != quant_path.name and quant_path.is_file() and quant_path.stat().st_size <= MAX_CONFIG_BYTES:
            try:
                quant = json.loads(quant_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raise InputError(quant_path.name, "is not a readable JSON file") from None
            return spec.model_copy(update=hf_quant_fields(quant, quant_path.name))
    return spec
