"""Quantization formats side by side for the user's scenario (primer §3-§4).

For each weight precision in data/precisions.yaml:

    weights          = quantized params × bits / 8 + 16-bit embeddings where the format keeps them
    KV per token     = 2 × layers × KV heads × head dim × KV bytes   (unchanged: activations stay 16-bit)
    KV headroom      = vLLM's pool per GPU after weights, activations and runtime overhead
    max concurrency  = pool blocks // blocks per request of the chosen context
    decode tokens/s  = 1 / decode step at batch 1 (per user), batch / step at the chosen batch (server)

Fewer bits read fewer bytes per decode step, so decode speeds up where it is memory-bound, less the format's
dequantisation overhead; the KV cache does not shrink (use --kv-dtype fp8 for that).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from planner.core.catalog import weight_precisions
from planner.core.precision import WeightPrecision, resolve_kv_bytes
from planner.core.scenario import Resolved
from planner.latency.perf_model import PerfModel
from planner.memory.plan import plan_memory

ENGINE_LOADERS = {
    "vllm": "vLLM / SGLang: Hugging Face checkpoints: FP16/BF16, FP8, INT8 W8A8, GPTQ, AWQ, bitsandbytes NF4",
    "llama.cpp": "llama.cpp and Ollama: a single GGUF file (weights, tokenizer, metadata) at a k-quant bit width",
    "tensorrt-llm": "TensorRT-LLM: compiles an engine for one GPU type (FP16/BF16, FP8, INT8, INT4 AWQ/GPTQ)",
}


def format_family(p: WeightPrecision) -> str:
    """gguf, gptq, awq, bitsandbytes, fp8, int8 or native (16/32-bit)."""
    pid = p.id.lower()
    if pid.startswith("q") and "_" in pid:
        return "gguf"
    for family in ("gptq", "awq", "fp8", "int8"):
        if pid.startswith(family):
            return family
    return "bitsandbytes" if pid == "nf4" else "native"


def with_weights(r: Resolved, p: WeightPrecision) -> Resolved:
    """The scenario with another weight format; an `auto` KV cache keeps the activation dtype."""
    dep = r.deployment.model_copy(update={"weights": p.id})
    return dataclasses.replace(r, deployment=dep, weights=p, kv_bytes=resolve_kv_bytes(r.kv, p))


@dataclass(frozen=True)
class FormatRow:
    """Memory, concurrency and decode speed of one weight format for the scenario (a row of `quant`)."""

    id: str
    label: str
    family: str
    bits_per_weight: float
    weight_bytes: float
    weight_bytes_per_gpu: float
    kv_bytes_per_token: float
    kv_pool_bytes_per_gpu: float
    kv_cache_tokens: int
    max_requests: int
    fits: bool
    decode_tokens_per_s_batch1: float | None  # None: does not fit
    batch: int  # the batch decoded, capped by max_requests (0 when it does not fit)
    decode_tokens_per_s_batch: float | None
    dequant_overhead: float
    engines: list[str]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def format_row(r: Resolved, p: WeightPrecision, context_tokens: int, batch: int) -> FormatRow:
    """Memory, concurrency and decode speed of one weight format for this scenario."""
    rq = dataclasses.replace(with_weights(r, p), context_tokens=context_tokens)
    plan = plan_memory(rq)
    pm = PerfModel(rq)
    one = float(pm.decode(1, context_tokens).total_s)
    b = min(batch, plan.paged_max_requests)
    fits = plan.fits and plan.paged_max_requests >= 1
    step_b = float(pm.decode(b, context_tokens).total_s) if fits and b >= 1 else None
    return FormatRow(
        id=p.id,
        label=p.label,
        family=format_family(p),
        bits_per_weight=p.bits_per_weight,
        weight_bytes=plan.weight_bytes,
        weight_bytes_per_gpu=plan.weight_bytes_per_gpu,
        kv_bytes_per_token=plan.kv_bytes_per_token,
        kv_pool_bytes_per_gpu=plan.kv_pool_bytes_per_gpu,
        kv_cache_tokens=plan.kv_cache_tokens,
        max_requests=plan.paged_max_requests,
        fits=fits,
        decode_tokens_per_s_batch1=1 / one if fits else None,
        batch=b if fits else 0,
        decode_tokens_per_s_batch=b / step_b if step_b else None,
        dequant_overhead=p.dequant_overhead,
        engines=list(p.engines),
    )


def compare_formats(r: Resolved, context_tokens: int, batch: int, ids: list[str] | None = None) -> list[FormatRow]:
    """One row per weight format (all of data/precisions.yaml unless `ids` is given)."""
    formats = weight_precisions()
    chosen = ids or list(formats)
    return [format_row(r, formats[pid], context_tokens, batch) for pid in chosen]
