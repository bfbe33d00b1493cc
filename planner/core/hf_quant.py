"""A checkpoint's own weight format: from config.json's `quantization_config`, or from a ModelOpt
`hf_quant_config.json` beside it (planner.core.hf_config)."""

from __future__ import annotations

from typing import Any

from planner.core import compressed_tensors
from planner.core.errors import InputError


def _quant_fields(cfg: dict) -> dict:
    """The checkpoint's weight format from quantization_config (fp8, AWQ/GPTQ 4- or 8-bit, MXFP4); {} when 16-bit.

    gpt-oss: quant_method mxfp4 with modules_to_not_convert naming attention, router, embeddings and lm_head: the
    experts are MXFP4 and the rest stays BF16. DeepSeek-V4 states `expert_dtype: fp4` beside its FP8 config."""
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return {}
    method, bits = str(q.get("quant_method", "")).lower(), q.get("bits")
    if method == "compressed-tensors":  # Kimi-K2.5: INT4 g32 routed experts, BF16 attention and shared experts
        per_module = compressed_tensors.module_bits(q)
        fmt = compressed_tensors.headline_format(q, per_module)
        return {"quantized_weights": fmt, "module_bits": per_module} if fmt else {}
    if method == "modelopt":  # newer ModelOpt exports: hf_quant_config.json's fields inside config.json
        return hf_quant_fields({"quantization": q}, "config.json: quantization_config")
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
