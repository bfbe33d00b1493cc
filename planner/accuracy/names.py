"""Common names in benchmark files resolved to catalogue ids, saying how.

A benchmark file names hardware and checkpoints as its authors wrote them: "H200 SXM 141GB", "h200_sxm",
"NVIDIA H100 80GB HBM3"; "meta-llama/Llama-3.3-70B-Instruct", "nvidia/DeepSeek-R1-NVFP4". The planner predicts from
a GPU in data/gpus.yaml and a model preset in data/models/, so each name is matched:

- GPU: the catalogue part all of whose id words appear among the name's words ("h200 sxm 141gb" has "h200";
  "a100 80gb" has both words of A100-80GB), the one with most words winning; a bare "H100" is the SXM part.
- model: the preset of that name, else the name without a checkpoint suffix (-Instruct, -Chat, -FP8, -NVFP4, a
  date like -0528: a fine-tune or a quantised copy has the base model's architecture), else a release that ships
  the same config.json dimensions as a preset (SAME_ARCHITECTURE, each with its source). The weight format a
  suffix names (-FP8 -> fp8) is returned as a hint for rows that do not state one.

Every non-exact match carries a note, shown with the prediction.
"""

from __future__ import annotations

import re

from planner.core.catalog import gpus, model_presets

# Releases whose config.json has the dimensions of a preset (layers, hidden, heads, experts, vocabulary):
# - Llama 3.3 70B: same LlamaForCausalLM config as Llama 3.1 70B (80 layers, 8192 hidden, 64/8 heads, 128,256 vocab;
#   meta-llama/Llama-3.3-70B-Instruct config.json); Meta-Llama-3 8B/70B differ from 3.1 only in rope scaling.
# - DeepSeek-R1 (and -0528), DeepSeek-V3-0324 and DeepSeek-V3.1: DeepseekV3ForCausalLM with DeepSeek-V3's 61 layers,
#   7168 hidden, 256 routed + 1 shared experts, top-8, MLA ranks 512/1536 (each repository's config.json).
SAME_ARCHITECTURE = {
    "llama-3.3-70b": "meta-llama/Llama-3.1-70B",
    "meta-llama-3-70b": "meta-llama/Llama-3.1-70B",
    "meta-llama-3-8b": "meta-llama/Llama-3.1-8B",
    "meta-llama-3.1-8b": "meta-llama/Llama-3.1-8B",
    "meta-llama-3.1-70b": "meta-llama/Llama-3.1-70B",
    "deepseek-r1": "deepseek-ai/DeepSeek-V3",
    "deepseek-v3.1": "deepseek-ai/DeepSeek-V3",
    "deepseek-v3-base": "deepseek-ai/DeepSeek-V3",
    "qwen2.5-7b-instruct": "Qwen/Qwen2.5-7B",
}
# checkpoint suffixes -> the weight format they name (None: not a weight format)
SUFFIX_FORMATS = {
    "instruct": None,
    "chat": None,
    "hf": None,
    "base": None,
    "it": None,
    "fp8": "fp8",
    "fp8-dynamic": "fp8",
    "fp8-block": "fp8",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "fp4": "nvfp4",
    "awq": "awq-int4",
    "gptq-int4": "gptq-int4",
    "gptq-int8": "gptq-int8",
    "w8a8": "int8",
    "int4": "gptq-int4",
}
_DATE = re.compile(r"-(\d{4})$")


def gpu_words(text: str) -> list[str]:
    """Lowercase alphanumeric words of a GPU name ("H200 SXM 141GB" -> h200, sxm, 141gb)."""
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def resolve_gpu(text: str) -> tuple[str | None, str]:
    """(catalogue id or None, note): the part whose id words all appear in `text`, most words first."""
    words = set(gpu_words(text))
    if not words:
        return None, ""
    best, best_n = None, 0
    for gid in gpus():
        id_words = gpu_words(gid)
        if set(id_words) <= words and len(id_words) > best_n:
            best, best_n = gid, len(id_words)
    if best is None:  # "H100 80GB HBM3": the model number alone, SXM unless the name says PCIe
        sxm = [gid for gid in gpus() if gpu_words(gid)[0] in words and "pcie" not in gpu_words(gid)]
        if len(sxm) == 1:
            return sxm[0], f"GPU {text!r} read as {sxm[0]} (no form factor given: the SXM part)"
        return None, ""
    exact = "".join(gpu_words(text)) == "".join(gpu_words(best))
    return best, "" if exact else f"GPU {text!r} read as {best}"


def resolve_model(text: str) -> tuple[str | None, str, str | None]:
    """(preset id or None, note, weight format the checkpoint's suffix names or None)."""
    name = text.strip()
    presets = {pid.lower(): pid for pid in model_presets()}
    if name.lower() in presets:
        return presets[name.lower()], "", None
    by_name = {pid.split("/")[-1].lower(): pid for pid in model_presets()}
    base, fmt = name.split("/")[-1].lower(), None
    while True:
        if base in by_name:
            return by_name[base], _note(text, by_name[base], "the same architecture"), fmt
        if base in SAME_ARCHITECTURE:
            pid = SAME_ARCHITECTURE[base]
            return pid, _note(text, pid, "a release with the same config.json dimensions"), fmt
        stripped = _strip_suffix(base)
        if stripped is None:
            return None, "", fmt
        base, suffix_fmt = stripped
        fmt = fmt or suffix_fmt


def _strip_suffix(base: str) -> tuple[str, str | None] | None:
    """`base` without its last checkpoint suffix (longest known suffix first), or None if it has none."""
    for suffix in sorted(SUFFIX_FORMATS, key=len, reverse=True):
        if base.endswith("-" + suffix):
            return base[: -len(suffix) - 1], SUFFIX_FORMATS[suffix]
    if _DATE.search(base):
        return _DATE.sub("", base), None
    return None


def _note(text: str, pid: str, why: str) -> str:
    return f"model {text!r} predicted with the preset {pid} ({why})"
