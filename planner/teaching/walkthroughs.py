"""The primer's worked examples as numbered steps: formula, the numbers substituted, the result with its unit.

Each walkthrough is a pure function of its inputs (planner.teaching.inputs, defaults = the primer) and takes
every number from the planner's own functions (planner.memory.sizes, planner.latency.metrics's given-rates mode,
planner.batching.step_model), so a walkthrough can never disagree with the pages. `value` is in the unit printed
(GB, ms, %), rounded only for display.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from planner.batching.report import summarize, waits
from planner.batching.requests import make_requests
from planner.batching.step_model import run_pair
from planner.core.specs import ModelSpec
from planner.latency.metrics import batching_tradeoff, given_rates
from planner.memory import sizes as memory
from planner.teaching.disagg_walkthrough import DisaggInputs, disaggregation
from planner.teaching.inputs import (
    KVCacheInputs,
    LatencyInputs,
    SixRequestsInputs,
    ThroughputInputs,
    TokenPositionsInputs,
    WeightsInputs,
)
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


# -- §5 latency -----------------------------------------------------------------------------------------------
def latency(i: LatencyInputs) -> list[Step]:
    """Primer §5 steps 1-5 with given rates (planner.latency.metrics.given_rates)."""
    wait_s, tpot_s, rate = i.queue_wait_ms / 1e3, i.tpot_ms / 1e3, i.prefill_tokens_per_s
    base = given_rates(i.prompt_tokens, i.output_tokens, wait_s, rate, tpot_s)
    short = given_rates(i.shorter_prompt_tokens, i.output_tokens, wait_s, rate, tpot_s)
    capped = given_rates(i.prompt_tokens, i.capped_output_tokens, wait_s, rate, tpot_s)
    cached = given_rates(i.prompt_tokens, i.output_tokens, wait_s, rate, tpot_s, i.cached_prefix_tokens)
    n, decode_s = i.output_tokens, (i.output_tokens - 1) * tpot_s
    return [
        Step(
            "1a",
            "Prefill time",
            "prompt tokens / prefill rate",
            f"{i.prompt_tokens:,} / {num(rate)} tokens/s",
            base.prefill_s * 1e3,
            "ms",
            0,
        ),
        Step(
            "1b",
            "Time to first token",
            "TTFT = queue wait + prefill",
            f"{num(i.queue_wait_ms)} ms + {base.prefill_s * 1e3:,.0f} ms",
            base.ttft_s * 1e3,
            "ms",
            0,
        ),
        Step("2", "Tokens per second per user", "1 / TPOT", f"1 / {tpot_s:g} s", base.tokens_per_s, "tokens/s", 0),
        Step(
            "3a",
            "End-to-end latency",
            "TTFT + (N − 1) × TPOT",
            f"{base.ttft_s:.3f} s + {n - 1:,} × {tpot_s:g} s",
            base.e2e_s,
            "s",
            3,
        ),
        Step(
            "3b",
            "Share of it spent decoding",
            "(N − 1) × TPOT / end-to-end",
            f"{decode_s:.3f} s / {base.e2e_s:.3f} s",
            base.decode_share * 100,
            "%",
            0,
            "Decode dominates: it runs N − 1 sequential passes, prefill one."
            if base.decode_share >= 0.5
            else "Prefill dominates here: the prompt is long next to the N − 1 decode passes.",
        ),
        Step(
            "4a",
            f"Shorten the prompt to {i.shorter_prompt_tokens:,} tokens",
            "TTFT' + (N − 1) × TPOT",
            f"{short.ttft_s:.3f} s + {n - 1:,} × {tpot_s:g} s",
            short.e2e_s,
            "s",
            3,
            f"A {base.e2e_s - short.e2e_s:.3f} s gain.",
        ),
        Step(
            "4b",
            f"Cap the output at {i.capped_output_tokens:,} tokens",
            "TTFT + (N' − 1) × TPOT",
            f"{base.ttft_s:.3f} s + {i.capped_output_tokens - 1:,} × {tpot_s:g} s",
            capped.e2e_s,
            "s",
            3,
            f"A {base.e2e_s - capped.e2e_s:.3f} s gain"
            + (
                ": output length is the bigger lever."
                if base.e2e_s - capped.e2e_s > base.e2e_s - short.e2e_s
                else ": here the prompt is the bigger lever."
                if base.e2e_s - short.e2e_s > base.e2e_s - capped.e2e_s
                else ", the same as shortening the prompt."
            ),
        ),
        Step(
            "5",
            f"Cache a {i.cached_prefix_tokens:,}-token prefix: time to first token",
            "queue wait + (prompt − cached prefix) / prefill rate",
            f"{num(i.queue_wait_ms)} ms + ({i.prompt_tokens:,} − {i.cached_prefix_tokens:,}) / {num(rate)} tokens/s"
            f" = {num(i.queue_wait_ms)} ms + {cached.prefill_s * 1e3:,.0f} ms",
            cached.ttft_s * 1e3,
            "ms",
            0,
            f"TTFT {base.ttft_s * 1e3:,.0f} → {cached.ttft_s * 1e3:,.0f} ms.",
        ),
    ]


def throughput(i: ThroughputInputs) -> list[Step]:
    """Primer §5, latency against throughput (planner.latency.metrics.batching_tradeoff)."""
    single_s, batch_s = i.single_tpot_ms / 1e3, i.batch_tpot_ms / 1e3
    base = given_rates(i.prompt_tokens, i.output_tokens, i.queue_wait_ms / 1e3, i.prefill_tokens_per_s, single_s)
    t = batching_tradeoff(single_s, batch_s, i.batch, base.ttft_s, i.output_tokens)
    return [
        Step(
            "1",
            "Time to first token",
            "queue wait + prompt / prefill rate",
            f"{num(i.queue_wait_ms)} ms + {i.prompt_tokens:,} / {num(i.prefill_tokens_per_s)} tokens/s",
            base.ttft_s * 1e3,
            "ms",
            0,
        ),
        Step(
            "2",
            f"Tokens per second per user in a batch of {i.batch}",
            "1 / batched TPOT",
            f"1 / {batch_s:g} s",
            t.per_user_tokens_per_s,
            "tokens/s",
            0,
        ),
        Step(
            "3",
            "End-to-end latency of the same request",
            "TTFT + (N − 1) × batched TPOT",
            f"{base.ttft_s:.3f} s + {i.output_tokens - 1:,} × {batch_s:g} s",
            t.e2e_s,
            "s",
            3,
            f"Alone it took {base.e2e_s:.3f} s.",
        ),
        Step(
            "4",
            "Server throughput",
            "batch / batched TPOT",
            f"{i.batch} / {batch_s:g} s",
            t.server_tokens_per_s,
            "tokens/s",
            0,
        ),
        Step(
            "5",
            "Throughput gain over one request",
            "server tokens/s / (1 / TPOT alone)",
            f"{t.server_tokens_per_s:,.0f} / {base.tokens_per_s:,.4g} tokens/s",
            t.throughput_gain,
            "×",
            1,
        ),
        Step(
            "6",
            "Per-token latency cost",
            "batched TPOT / TPOT alone",
            f"{num(i.batch_tpot_ms)} ms / {num(i.single_tpot_ms)} ms",
            t.latency_factor,
            "×",
            1,
            "Batching buys a large throughput gain for a small per-token slowdown.",
        ),
    ]


# -- §6 batching ----------------------------------------------------------------------------------------------
def _timeline(names: list[str], admitted, finish) -> str:
    return ", ".join(f"{n} {a}→{f}" for n, a, f in zip(names, admitted.tolist(), finish.tolist()))


def six_requests(i: SixRequestsInputs) -> list[Step]:
    """Primer §6: static against continuous batching in decode steps (planner.batching.step_model)."""
    n = len(i.output_tokens)
    names = list(string.ascii_uppercase[:n])
    req = make_requests([0] * n, i.output_tokens, names=names)
    runs = run_pair(req, i.slots, i.max_wait)
    s, c = summarize(runs["static"]), summarize(runs["continuous"])
    useful = s.useful_slot_steps
    steps = [
        Step(
            "1",
            "Useful slot-steps (one token each)",
            "sum of tokens needed",
            " + ".join(str(t) for t in i.output_tokens),
            useful,
            "slot-steps",
            0,
        )
    ]
    for key, summary, num_ in (("static", s, "2"), ("continuous", c, "3")):
        r = runs[key]
        how = (
            "a batch fills the slots and holds them until its longest finishes"
            if key == "static"
            else "a request takes the first free slot, every step"
        )
        steps.append(
            Step(
                num_,
                f"{key.capitalize()} batching: all done at step",
                how,
                f"admitted→finished: {_timeline(names, r.admitted, r.finish)}",
                summary.end_step,
                "steps",
                0,
            )
        )
    for key, summary, num_ in (("static", s, "4"), ("continuous", c, "5")):
        steps.append(
            Step(
                num_,
                f"{key.capitalize()}: GPU busy",
                "useful slot-steps / (slots × last step)",
                f"{useful} / ({i.slots} × {summary.end_step})",
                summary.gpu_busy * 100,
                "%",
                1,
            )
        )
    for key, summary, num_ in (("static", s, "6"), ("continuous", c, "7")):
        w = waits(runs[key]).tolist()
        steps.append(
            Step(
                num_,
                f"{key.capitalize()}: average wait",
                "mean of (step admitted − arrival)",
                f"({' + '.join(map(str, w))}) / {n} = {sum(w)}/{n}",
                summary.avg_wait,
                "steps",
                2,
            )
        )
    return steps


@dataclass(frozen=True)
class Walkthrough:
    title: str
    section: str
    inputs: type[BaseModel]
    run: Callable[[BaseModel], list[Step]]


WALKTHROUGHS: dict[str, Walkthrough] = {
    "kv-cache": Walkthrough("KV cache for a 7B model", "§3", KVCacheInputs, kv_cache),
    "weights": Walkthrough("Weight memory and quantization", "§4", WeightsInputs, weights),
    "token-positions": Walkthrough(
        "Token positions with and without the cache", "§3", TokenPositionsInputs, token_positions
    ),
    "latency": Walkthrough("Latency of one request", "§5", LatencyInputs, latency),
    "throughput": Walkthrough("Latency against throughput", "§5", ThroughputInputs, throughput),
    "six-requests": Walkthrough("Six requests on three slots", "§6", SixRequestsInputs, six_requests),
}


def run_walkthrough(name: str, inputs: BaseModel | None = None) -> list[Step]:
    """The steps of walkthrough `name` (primer defaults when no inputs are given)."""
    w = WALKTHROUGHS[name]
    return w.run(inputs if inputs is not None else w.inputs())


WALKTHROUGHS["disaggregation"] = Walkthrough(
    "When to disaggregate prefill and decode", "§9", DisaggInputs, disaggregation
)
