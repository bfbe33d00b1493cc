"""The primer's memory walkthroughs as steps: §3 the KV cache and token positions, §4 weight memory
(planner.teaching.walkthroughs module note)."""

from __future__ import annotations

import math

from planner.core.model_spec import ModelSpec
from planner.memory import sizes as memory
from planner.teaching.inputs import KVCacheInputs, TokenPositionsInputs, WeightsInputs
from planner.teaching.steps import Step, num

GB = 1e9  # the primer's worked examples use decimal units


# -- §3 KV cache ----------------------------------------------------------------------------------------------
def _kv_model(i: KVCacheInputs, kv_heads: int) -> ModelSpec:
    """The walkthrough's model as a ModelSpec (only the attention shape matters for the cache)."""
    hidden = i.num_attention_heads * i.head_dim
    return ModelSpec(
        name="walkthrough",
        hidden_size=hidden,
        num_layers=i.num_layers,
        num_attention_heads=i.num_attention_heads,
        num_kv_heads=kv_heads,
        head_dim=i.head_dim,
        intermediate_size=4 * hidden,
        vocab_size=32_000,
    )


def _fit_step(number: str, gpu_gb: float, weights_gb: float, request_bytes: float, note: str = "") -> Step:
    fit = memory.textbook_max_requests(gpu_gb * GB, weights_gb * GB, request_bytes)
    return Step(
        number,
        f"Requests that fit: {num(gpu_gb)} GB GPU, {num(weights_gb)} GB of weights",
        "floor((GPU memory − weights) / KV per request)",
        f"floor(({num(gpu_gb)} GB − {num(weights_gb)} GB) / {request_bytes / GB:.3f} GB) = "
        f"floor({num(gpu_gb - weights_gb)} GB / {request_bytes / GB:.3f} GB)",
        fit,
        "requests",
        0,
        note or "An upper bound: real servers keep a few GB for activations (§10).",
    )


def kv_cache(i: KVCacheInputs) -> list[Step]:
    """Primer §3 steps 1-6: KV bytes per token, per request, per batch, how many fit, and GQA."""
    model = _kv_model(i, i.num_kv_heads)
    per_token = memory.kv_bytes_per_token(model, i.bytes_per_value)
    per_request = memory.kv_bytes_per_request(model, i.bytes_per_value, i.tokens_per_request)
    gqa_request = memory.kv_bytes_per_request(_kv_model(i, i.gqa_kv_heads), i.bytes_per_value, i.tokens_per_request)
    hidden = i.num_attention_heads * i.head_dim
    return [
        Step(
            "1",
            "KV bytes per token",
            "2 (K and V) × layers × KV heads × head dim × bytes per value",
            f"2 × {i.num_layers} × {i.num_kv_heads} × {i.head_dim} × {num(i.bytes_per_value)}",
            per_token,
            "B",
            0,
            f"≈ {per_token / 1e6:.2f} MB. Heads × head dim = {i.num_attention_heads} × {i.head_dim} = "
            f"{hidden:,} (the hidden size); with grouped-query attention count the KV heads only.",
        ),
        Step(
            "2",
            f"One request of {i.tokens_per_request:,} tokens (prompt + output)",
            "KV bytes per token × tokens",
            f"{per_token:,.0f} B × {i.tokens_per_request:,}",
            per_request / GB,
            "GB",
            2,
            "Every concurrent request holds its own cache.",
        ),
        Step(
            "3",
            f"A batch of {i.batch} such requests",
            "requests × KV per request",
            f"{i.batch} × {per_request / GB:.3f} GB",
            i.batch * per_request / GB,
            "GB",
            1,
        ),
        _fit_step("4a", i.gpu_gb, i.weights_gb, per_request),
        _fit_step("4b", i.big_gpu_gb, i.weights_gb, per_request),
        _fit_step(
            "5",
            i.small_gpu_gb,
            i.quantized_weights_gb,
            per_request,
            "Quantizing the weights does not shrink the cache: the cache, not the weights, sets the limit.",
        ),
        Step(
            "6",
            f"Grouped-query attention with {i.gqa_kv_heads} KV heads: KV per request",
            "2 × layers × GQA KV heads × head dim × bytes per value × tokens",
            f"2 × {i.num_layers} × {i.gqa_kv_heads} × {i.head_dim} × {num(i.bytes_per_value)} × "
            f"{i.tokens_per_request:,}",
            gqa_request / GB,
            "GB",
            2,
            f"{per_request / gqa_request:g}× smaller than with {i.num_kv_heads} KV heads."
            if i.gqa_kv_heads != i.num_kv_heads
            else f"Same as step 2: the model already caches {i.num_kv_heads} KV heads.",
        ),
    ]


def token_positions(i: TokenPositionsInputs) -> list[Step]:
    """Primer §3: positions pushed through the layers with and without the KV cache."""
    p, n = i.prompt_tokens, i.output_tokens
    without = memory.token_positions_without_cache(p, n)
    with_cache = memory.token_positions_with_cache(p, n)
    return [
        Step(
            "1",
            "Token positions without a cache",
            "P + (P+1) + … + (P+N−1) = N × P + N × (N − 1) / 2",
            f"{n:,} × {p:,} + {n:,} × {n - 1:,} / 2  ({p:,} + {p + 1:,} + … + {p + n - 1:,})",
            without,
            "positions",
            0,
            "Every step re-runs the whole sequence so far.",
        ),
        Step(
            "2",
            "Token positions with the KV cache",
            "P + N − 1",
            f"{p:,} + {n:,} − 1",
            with_cache,
            "positions",
            0,
            "The prompt once, then one new position per step.",
        ),
        Step(
            "3", "Work the cache saves", "without / with", f"{without:,} / {with_cache:,}", without / with_cache, "×", 0
        ),
    ]


# -- §4 weights -----------------------------------------------------------------------------------------------


def _weight_step(number: str, params_b: float, bits: float) -> Step:
    return Step(
        number,
        f"{num(params_b)}B parameters at {num(bits)} bits",
        "parameters × bytes per parameter",
        f"{num(params_b)} × 10⁹ × {num(bits / 8)} B",
        memory.weight_bytes_for_params(params_b * 1e9, bits) / GB,
        "GB",
        1,
    )


def weights(i: WeightsInputs) -> list[Step]:
    """Primer §4: weight memory at three precisions and whether a large model fits one GPU."""
    large = memory.weight_bytes_for_params(i.large_params_billion * 1e9, i.high_bits)
    gpus = math.ceil(large / (i.gpu_gb * GB))
    verdict = (
        "fits one GPU"
        if gpus <= 1
        else f"does not fit one {num(i.gpu_gb)} GB GPU: split it with tensor parallelism (§8)"
    )
    return [
        _weight_step("1", i.params_billion, i.high_bits),
        _weight_step("2", i.params_billion, i.mid_bits),
        _weight_step("3", i.params_billion, i.low_bits),
        _weight_step("4", i.large_params_billion, i.high_bits),
        Step(
            "5",
            f"GPUs of {num(i.gpu_gb)} GB the {num(i.large_params_billion)}B weights alone need",
            "ceil(weights / GPU memory)",
            f"ceil({large / GB:,.1f} GB / {num(i.gpu_gb)} GB)",
            gpus,
            "GPUs",
            0,
            f"The model {verdict}; the KV cache needs room on top. GPTQ/AWQ store per-group scales, so real "
            "4-bit files are a little larger.",
        ),
    ]
