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

from pydantic import ValidationError

from planner.core.errors import InputError, from_validation_error
from planner.core.hf_families import _family_fields, _mla_fields, _moe_fields, _newer_fields, _sliding
from planner.core.hf_quant import _quant_fields, hf_quant_fields
from planner.core.hf_values import MAX_DIMENSION, _positive_int, _show, _whole
from planner.core.hf_vision import _text_and_vision
from planner.core.json_input import load_json
from planner.core.model_spec import ModelSpec

MAX_CONFIG_BYTES = 1_000_000
SPEC_KEY = "servingplan_model_spec"  # a real config.json is a few KB; anything larger is not one


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
