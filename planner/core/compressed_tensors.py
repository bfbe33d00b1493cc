"""A `compressed-tensors` quantization_config priced module class by module class (planner.core.hf_quant).

compressed-tensors (llm-compressor's format, read by vLLM's CompressedTensorsConfig) lists `config_groups`, each
with `targets` (a module class such as "Linear", an exact module name, or a `re:` regex) and a `weights` scheme
(num_bits, type int|float, strategy tensor|channel|group|block, group_size, symmetric), plus an `ignore` list of
exact names and `re:` regexes. A module is quantized by the first group whose target matches it unless a name in
`ignore` matches it first; a `re:` pattern is matched from the start of the module name (Python re.match), an exact
name is the whole name or its last dotted parts (compressed-tensors `is_match`, vLLM
compressed_tensors/utils.py `_is_equal_or_regex_match`).

Stored bits per weight, scales and zero points included (the effective bits the planner prices):
    pack-quantized    num_bits packed into int32 words        + scale bits / group (+ zero point bits / group)
    naive-quantized   one int8 container per value (8 bits)   + the same scales
    float-quantized   num_bits (FP8: 8)                       + scales
    nvfp4/mxfp4-pack  4 bits                                  + FP8 E4M3 per 16 / E8M0 per 32
Scales are BF16 unless `scale_dtype` says otherwise (Kimi-K2.5: `weight_scale` BF16 [rows, cols / 32]); a
symmetric scheme stores no zero point; per-channel and per-tensor scales are below 0.01 bit and counted as 0.

Module classes are the parameter breakdown's (planner.core.params): attention, mlp_dense, experts_routed,
experts_shared, lm_head. Embeddings (nn.Embedding, not a Linear), the MoE router (vLLM builds DeepSeek's and
Qwen's gate with quant_config=None), norms and the vision tower stay at the checkpoint's 16-bit dtype.
"""

from __future__ import annotations

import re

from planner.core.errors import InputError

BITS_16 = 16.0
# Module names of the decoder, relative to the language model, with the weight share of each projection in its class
# taken as equal (the price of a class is exact when the whole class is in or out, as in every checkpoint we know).
MODULE_NAMES = {
    "attention": (
        "model.layers.1.self_attn.q_proj",
        "model.layers.1.self_attn.k_proj",
        "model.layers.1.self_attn.v_proj",
        "model.layers.1.self_attn.o_proj",
    ),
    "mlp_dense": ("model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj", "model.layers.0.mlp.down_proj"),
    "experts_routed": (
        "model.layers.1.mlp.experts.0.gate_proj",
        "model.layers.1.mlp.experts.0.up_proj",
        "model.layers.1.mlp.experts.0.down_proj",
    ),
    "experts_shared": (
        "model.layers.1.mlp.shared_experts.gate_proj",
        "model.layers.1.mlp.shared_experts.up_proj",
        "model.layers.1.mlp.shared_experts.down_proj",
    ),
    "lm_head": ("lm_head",),
}
SCALE_BITS = {"torch.uint8": 8, "torch.float8_e4m3fn": 8, "torch.float8_e8m0fnu": 8, "torch.float32": 32}
PACKED_FP4 = {"nvfp4-pack-quantized": (16, 8), "mxfp4-pack-quantized": (32, 8)}  # group, scale bits


def matches(name: str, pattern: str) -> bool:
    """An `ignore` / `targets` entry against a module name: `re:` from the start, else the name or its tail."""
    if pattern.startswith("re:"):
        return re.match(pattern[3:], name) is not None
    return name == pattern or name.endswith("." + pattern)


def _scheme_for(name: str, groups: list[dict], ignore: list[str]) -> dict | None:
    """The weights scheme of the group that quantizes module `name` (every listed module is a Linear), or None."""
    if any(matches(name, str(p)) for p in ignore):
        return None
    for group in groups:
        targets = [str(t) for t in group.get("targets") or []]
        if any(t == "Linear" or matches(name, t) for t in targets):
            return group
    return None


def scheme_bits(group: dict, fmt: str, source: str) -> float:
    """Stored bits per weight of one group's scheme, scales and zero points included (module note)."""
    w = group.get("weights")
    if not isinstance(w, dict):
        raise InputError(f"{source}: config_groups.weights", "missing (compressed-tensors needs a weights scheme)")
    bits = w.get("num_bits")
    if not isinstance(bits, int) or isinstance(bits, bool) or not 1 <= bits <= 16:
        raise InputError(f"{source}: weights.num_bits", f"must be a whole number of bits 1-16, got {bits!r}")
    fmt = str(group.get("format") or fmt)
    if fmt == "dense":
        return BITS_16  # fake-quantized: stored at the model dtype
    if fmt in PACKED_FP4:
        size, scale = PACKED_FP4[fmt]
        return 4 + scale / size
    stored = 8.0 if fmt in ("naive-quantized", "int-quantized") and bits <= 8 else float(bits)
    strategy = str(w.get("strategy") or "tensor")
    scale_bits = SCALE_BITS.get(str(w.get("scale_dtype")), 16)
    if strategy == "group":
        size = w.get("group_size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise InputError(f"{source}: weights.group_size", f"must be a positive whole number, got {size!r}")
        zero = 0 if w.get("symmetric", True) else bits  # an asymmetric scheme packs one zero point per group
        return stored + (scale_bits + zero) / size
    if strategy == "block":
        block = w.get("block_structure") or [128, 128]
        return stored + scale_bits / (int(block[0]) * int(block[1]))
    return stored  # tensor / channel: one scale per tensor or row (< 0.01 bit)


def module_bits(q: dict, source: str = "config.json") -> dict[str, float]:
    """Bits per weight of each module class a compressed-tensors config quantizes (classes left out stay 16-bit)."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise InputError(f"{source}: quantization_config.config_groups", "missing (compressed-tensors lists them)")
    ordered = [g for g in groups.values() if isinstance(g, dict)]
    ignore = q.get("ignore") or []
    fmt = str(q.get("format") or "pack-quantized")
    out = {}
    for module_class, names in MODULE_NAMES.items():
        per_name = []
        for name in names:
            group = _scheme_for(name, ordered, ignore)
            per_name.append(BITS_16 if group is None else scheme_bits(group, fmt, source))
        if any(b != BITS_16 for b in per_name):
            out[module_class] = sum(per_name) / len(per_name)
    return out


def headline_format(q: dict, bits: dict[str, float]) -> str | None:
    """The data/precisions.yaml id that names the checkpoint: the scheme of its routed experts, else its layers."""
    groups = [g for g in (q.get("config_groups") or {}).values() if isinstance(g, dict)]
    if not groups or not bits:
        return None
    w = groups[0].get("weights") or {}
    kind, num = str(w.get("type", "int")), w.get("num_bits")
    fmt = str(groups[0].get("format") or q.get("format") or "")
    if fmt == "mxfp4-pack-quantized" or (kind == "float" and num == 4 and w.get("group_size") == 32):
        return "mxfp4"
    if fmt == "nvfp4-pack-quantized" or (kind == "float" and num == 4):
        return "nvfp4"
    if kind == "float" and num == 8:
        return "fp8"
    if num == 8:
        return "int8" if groups[0].get("input_activations") else "gptq-int8"
    if num == 4:
        return "int4-g32" if w.get("group_size") == 32 else "gptq-int4"
    return None
