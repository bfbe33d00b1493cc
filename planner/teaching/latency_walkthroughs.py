"""The primer's §5 walkthroughs as steps: the latency of one request, and latency against throughput
(planner.teaching.walkthroughs module note)."""

from __future__ import annotations

from planner.latency.metrics import batching_tradeoff, given_rates
from planner.teaching.inputs import LatencyInputs, ThroughputInputs
from planner.teaching.steps import Step, num


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
