"""Engines: their names (a scenario's `engine`), and the batch defaults an engine picks for max_num_batched_tokens /
max_num_seqs when the user sets neither.

A small table keyed by engine; each entry maps (GPU, usage context) to the two limits.

vLLM V1 (vllm/engine/arg_utils.py @ 99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b, `_set_default_args`; the same table
as `EngineArgs.get_batch_defaults` on newer main):

    if device_memory >= 70 * GiB_bytes and "a100" not in device_name:   # H100, H200, MI300x, ...
        max_num_batched_tokens = {LLM_CLASS: 16384, OPENAI_API_SERVER: 8192}
        max_num_seqs           = {LLM_CLASS: 1024,  OPENAI_API_SERVER: 1024}
    else:                                                               # A100 (PR #17885), L40S, A10, ...
        max_num_batched_tokens = {LLM_CLASS: 8192,  OPENAI_API_SERVER: 2048}
        max_num_seqs           = {LLM_CLASS: 256,   OPENAI_API_SERVER: 256}
    max_num_seqs = min(max_num_seqs, max_num_batched_tokens)

`vllm serve` is the OPENAI_API_SERVER context (our default, "serve"); the offline `LLM` class (benchmarks'
throughput runs) is LLM_CLASS ("offline"). device_memory is the total memory the device reports (GiB = 2^30).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from planner.core.catalog import DATA_DIR, _read_yaml
from planner.core.errors import InputError
from planner.core.units import GiB

DEFAULT_ENGINE = "vllm"  # the edges' default only: a new Scenario, the CLI's --engine
ENGINES = ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "lmdeploy")  # a user's choices (+ calibration-only ones)
USAGE_CONTEXTS = ("serve", "offline")


@dataclass(frozen=True)
class BatchDefaults:
    max_num_batched_tokens: int
    max_num_seqs: int
    rule: str  # which row of the engine's table applied, for a caption


def vllm_v1(gpu, usage: str) -> BatchDefaults:
    big = gpu.usable_memory_bytes >= 70 * GiB and "a100" not in f"{gpu.id} {gpu.name}".lower()
    if big:
        tokens, seqs = (8192, 1024) if usage == "serve" else (16384, 1024)
        rule = "≥ 70 GiB and not an A100"
    else:
        tokens, seqs = (2048, 256) if usage == "serve" else (8192, 256)
        rule = "A100 or < 70 GiB"
    return BatchDefaults(
        tokens,
        min(seqs, tokens),
        f"vLLM V1 default for this GPU ({rule}, {'vllm serve' if usage == 'serve' else 'offline LLM'})",
    )


ENGINE_BATCH_DEFAULTS = {"vllm": vllm_v1}  # engine id -> its table; others use vLLM's


def batch_defaults(gpu, engine: str, usage: str = "serve") -> BatchDefaults:
    """The engine's max_num_batched_tokens / max_num_seqs on `gpu` (a GPUSpec) for a usage context.
    Engines without an entry use vLLM's table (the planner's reference engine)."""
    if usage not in USAGE_CONTEXTS:
        raise InputError("usage", f"use one of {', '.join(USAGE_CONTEXTS)}")
    return ENGINE_BATCH_DEFAULTS.get(engine, vllm_v1)(gpu, usage)


def sglang_chunked_prefill_size(total_bytes: float) -> int:
    """SGLang's default chunked_prefill_size by GPU memory (server_args.py _handle_gpu_memory_settings, MiB)."""
    gpu_mem = total_bytes / 2**20
    return 2048 if gpu_mem < 35 * 1024 else 4096 if gpu_mem < 60 * 1024 else 8192 if gpu_mem < 160 * 1024 else 16384


# Calibration-only profiles (data/efficiency.yaml, no engines.yaml entry): the engine whose rules they run under,
# their label and version. `splitwise`: the unnamed engine behind the Splitwise profiling data (vLLM's rules, as
# before engines were objects); `tensorrt-llm-0.9`: TensorRT-LLM's v0.9.0 performance tables, a superseded major
# version (planner.accuracy.published_points.SUPERSEDED_VERSIONS) with TensorRT-LLM's rules; `vllm-0.6`: vLLM's V0
# engine (0.6.x points) with vLLM's rules.
CALIBRATION_ONLY = {
    "splitwise": ("vllm", "splitwise", "unknown"),
    "tensorrt-llm-0.9": ("tensorrt-llm", "TensorRT-LLM 0.9.0", "0.9.0"),
    "vllm-0.6": ("vllm", "vLLM 0.6 (V0 engine)", "0.6.0-0.6.3"),
}


def base_engine(name: str) -> str:
    """The engine whose rules a calibration-only profile runs (tensorrt-llm-0.9 -> tensorrt-llm); any other name as
    it is."""
    return CALIBRATION_ONLY.get(name, (name,))[0]


@lru_cache(maxsize=1)
def fitted_engines() -> tuple[str, ...]:
    """Engines with fitted constants in data/efficiency.yaml: ENGINES plus calibration-only ones (splitwise)."""
    return tuple(_read_yaml(DATA_DIR / "efficiency.yaml").get("profiles") or ())


def is_known_engine(name: str) -> bool:
    """A user's engine choice, or an engine of the published points that has its own fitted constants."""
    return name.lower() in ENGINES or name.lower() in fitted_engines() or name.lower() in CALIBRATION_ONLY
