"""Build a ModelSpec from a Hugging Face `config.json` (Llama, Mistral, Qwen2/3, Gemma-2, Phi-3, Mixtral,
Qwen3-MoE, DeepSeek-V2 MLA, Falcon with its old RefinedWeb keys).

Each family spells the same quantity differently; `_first` reads the first key present so that a missing field
is reported by its Hugging Face name.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.core.errors import InputError, from_validation_error
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
        and math.isfinite(value)
        and value == int(value)
        and minimum <= value <= MAX_DIMENSION
    )


def _positive_int(cfg: dict, *keys: str, default: Any = ..., source: str = "config.json") -> int:
    value = _first(cfg, *keys, default=default, source=source)
    if not _whole(value, 1):
        key = next((k for k in keys if k in cfg and cfg[k] is not None), keys[0])
        raise InputError(f"{source}: {key}", f"must be a whole number from 1 to {MAX_DIMENSION:,}, got {_show(value)}")
    return int(value)


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
        num_experts_per_tok=_positive_int(cfg, "num_experts_per_tok", source=source),
        num_shared_experts=_count(cfg, "n_shared_experts", source),
        num_dense_layers=_count(cfg, "first_k_dense_replace", source),
    )
    # Mixtral's experts use intermediate_size; Qwen3-MoE and DeepSeek name the expert width separately.
    fields["moe_intermediate_size"] = _positive_int(cfg, "moe_intermediate_size", "intermediate_size", source=source)
    if cfg.get("mlp_only_layers"):
        if not isinstance(cfg["mlp_only_layers"], list):
            raise InputError(f"{source}: mlp_only_layers", "must be a list of layer indices")
        fields["num_dense_layers"] = len(cfg["mlp_only_layers"])
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
    """The checkpoint's weight format from quantization_config (fp8, AWQ/GPTQ 4- or 8-bit); {} when 16-bit."""
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return {}
    method, bits = str(q.get("quant_method", "")).lower(), q.get("bits")
    fmt = {("fp8", None): "fp8", ("awq", 4): "awq-int4", ("gptq", 4): "gptq-int4", ("gptq", 8): "gptq-int8"}.get(
        (method, bits if method in ("awq", "gptq") else None)
    )
    return {"quantized_weights": fmt} if fmt else {}


def model_from_hf_config(cfg: dict, name: str | None = None, source: str = "config.json") -> ModelSpec:
    """ModelSpec from a parsed config.json; InputError names the missing or bad key."""
    if not isinstance(cfg, dict):
        raise InputError(source, "must be a JSON object (the contents of a Hugging Face config.json)")
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
        head_dim=_positive_int(cfg, "head_dim", default=hidden // heads, source=source),
        intermediate_size=_positive_int(
            cfg, "intermediate_size", "ffn_hidden_size", "n_inner", default=default_ffn, source=source
        ),
        vocab_size=_positive_int(cfg, "vocab_size", source=source),
        max_position_embeddings=_positive_int(
            cfg, "max_position_embeddings", "max_seq_len", "n_positions", default=2048, source=source
        ),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        torch_dtype=str(cfg.get("torch_dtype") or "bfloat16"),
        sliding_window=window,
        num_sliding_layers=sliding_layers,
    )
    fields.update(_family_fields(cfg, model_type, source))
    fields.update(_moe_fields(cfg, layers, source))
    fields.update(_mla_fields(cfg, source))
    fields.update(_quant_fields(cfg))
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
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as err:
        what = err.msg.removesuffix(" at")  # "Unterminated string starting at" + " at line 12" read "at at"
        raise InputError(source, f"is not valid JSON: {what} at line {err.lineno}, column {err.colno}") from None
    except (ValueError, RecursionError) as err:  # e.g. a 5,000-digit number, or arrays nested 100,000 deep
        raise InputError(source, f"is not a usable JSON document ({type(err).__name__}: {_show(str(err))})") from None
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
    return parse_config_text(data, name=name or path.stem, source=path.name)
