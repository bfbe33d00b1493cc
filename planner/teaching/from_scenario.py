"""Fill a walkthrough's inputs from the sidebar scenario (the page's "load the sidebar scenario" button).

What maps: the model's attention shape, KV bytes, tokens per request, GPU memory and weights; prefill rate and
TPOT predicted by the roofline model (planner.latency.metrics.estimate) for the latency walkthroughs. The scenario holds
only tokens per request, so the prompt/output split keeps the walkthrough's output length (300 by default) and
gives the rest to the prompt. Inputs with no counterpart in the scenario keep their current values.
"""

from __future__ import annotations

from pydantic import BaseModel

from planner.core.catalog import get_weight_precision
from planner.core.params import count_params
from planner.core.scenario import Resolved, Scenario, resolve
from planner.latency.metrics import estimate, memory_limit
from planner.memory import sizes as memory
from planner.teaching.disagg_walkthrough import DisaggInputs, fill_from_scenario
from planner.teaching.inputs import (
    KVCacheInputs,
    LatencyInputs,
    SixRequestsInputs,
    ThroughputInputs,
    TokenPositionsInputs,
    WeightsInputs,
    split_context,
)

GB = 1e9
FOUR_BIT = "awq-int4"  # the 4-bit format of step 5 (weights at 4 bits, embeddings kept 16-bit)
LOADS = {
    "kv-cache": "model shape, KV bytes per value, tokens per request, GPU memory, weights (whole model on one GPU)",
    "weights": "parameter count, weight bits, GPU memory",
    "token-positions": "tokens per request, split into prompt and output",
    "latency": "tokens per request; prefill rate and TPOT predicted by the roofline model at batch 1",
    "throughput": "tokens per request; TPOT alone and in the batch predicted by the roofline model",
    "six-requests": "nothing: the step model has no GPU or model in it",
    "disaggregation": "KV bytes per token, tokens per request split into prompt and output, the GPU's NIC × "
    "sending GPUs (the per-GPU rates stay DistServe's: the Disaggregation page simulates yours)",
}


def _kv_cache(r: Resolved, base: KVCacheInputs) -> dict:
    m = r.model
    gqa = min(base.gqa_kv_heads, m.num_kv_heads)
    if m.num_attention_heads % gqa:
        gqa = m.num_kv_heads
    return dict(
        num_layers=m.num_layers,
        num_attention_heads=m.num_attention_heads,
        num_kv_heads=m.num_kv_heads,
        head_dim=m.head_dim,
        bytes_per_value=r.kv_bytes,
        tokens_per_request=r.context_tokens,
        gpu_gb=r.gpu.memory_gb,
        weights_gb=round(memory.weight_bytes(m, r.weights) / GB, 2),
        quantized_weights_gb=round(memory.weight_bytes(m, get_weight_precision(FOUR_BIT)) / GB, 2),
        gqa_kv_heads=gqa,
    )  # GB rounded to 2 decimals, as the primer quotes them


def _weights(r: Resolved, base: WeightsInputs) -> dict:
    return dict(
        params_billion=round(count_params(r.model).total / 1e9, 2),
        high_bits=r.weights.bits_per_weight,
        gpu_gb=r.gpu.memory_gb,
    )


def _rates(r: Resolved, batch: int, prompt: int, output: int) -> tuple[float, float]:
    """(prefill tokens/s of one prompt, mean TPOT in ms) from the roofline model."""
    single = estimate(r, 1, prompt, output, check_memory=False)
    tpot_ms = estimate(r, batch, prompt, output, check_memory=False).tpot_s * 1e3 if batch > 1 else single.tpot_s * 1e3
    return round(prompt / single.prefill_s), round(tpot_ms, 2)  # rounded as a person would type them


def _latency(r: Resolved, base: LatencyInputs) -> dict:
    prompt, output = split_context(r.context_tokens, base.output_tokens)
    rate, tpot_ms = _rates(r, 1, prompt, output)
    return dict(
        prompt_tokens=prompt,
        output_tokens=output,
        prefill_tokens_per_s=rate,
        tpot_ms=tpot_ms,
        shorter_prompt_tokens=max(1, prompt // 2),
        capped_output_tokens=max(1, output // 2),
        cached_prefix_tokens=min(base.cached_prefix_tokens, prompt * 3 // 4),
    )


def _throughput(r: Resolved, base: ThroughputInputs) -> dict:
    prompt, output = split_context(r.context_tokens, base.output_tokens)
    batch = max(1, min(base.batch, memory_limit(r, prompt, output)))
    rate, single_ms = _rates(r, 1, prompt, output)
    _, batch_ms = _rates(r, batch, prompt, output)
    return dict(
        prompt_tokens=prompt,
        output_tokens=output,
        prefill_tokens_per_s=rate,
        single_tpot_ms=single_ms,
        batch=batch,
        batch_tpot_ms=batch_ms,
    )


_FILL = {
    "kv-cache": (KVCacheInputs, _kv_cache),
    "weights": (WeightsInputs, _weights),
    "token-positions": (
        TokenPositionsInputs,
        lambda r, b: dict(zip(("prompt_tokens", "output_tokens"), split_context(r.context_tokens, b.output_tokens))),
    ),
    "latency": (LatencyInputs, _latency),
    "throughput": (ThroughputInputs, _throughput),
    "six-requests": (SixRequestsInputs, lambda r, b: {}),
    "disaggregation": (DisaggInputs, fill_from_scenario),
}


def inputs_from_scenario(name: str, scenario: Scenario, current: BaseModel | None = None) -> BaseModel:
    """Walkthrough `name`'s inputs with every figure the scenario determines taken from it."""
    cls, fill = _FILL[name]
    base = current if isinstance(current, cls) else cls()
    values = {**base.model_dump(), **fill(resolve(scenario), base)}
    return cls(**values)
