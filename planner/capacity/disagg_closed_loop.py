"""A given xPyD layout under a closed loop of C clients (a benchmark's --max-concurrency C): mean TTFT and TPOT.

Each client sends its next request when the last one finishes, so the rate follows from the latencies:
    λ = C / (TTFT + (O − 1) × TPOT)                                         (Little's law over the cycle)
Decode: Y instances × DP ranks hold n = λ (O − 1) TPOT / (Y × DP) sequences each, at most the rank's batch B and
    what its KV pool holds at I + O tokens per sequence;
    TPOT = one decode step of n sequences at context I + O/2 (PerfModel, EP and DP terms included).
Prefill: X instances × DP ranks, each serving a request in t_p = PerfModel prefill of one prompt of I tokens;
    a rank at utilisation ρ = λ t_p / (X × DP) waits ρ t_p / (2 (1 − ρ)) on average (M/D/1), and never longer
    than all C clients queued ahead of it: C t_p / (X × DP) (a closed loop holds at most C requests).
    TTFT = request path + wait + t_p + KV transfer + hand-off (planner.capacity.disagg_layout), the request path being
    the prefill instance's PerfModel.request_path_s and the hand-off's first-token steps including the decode
    engine's output-stream lag (EfficiencyProfile.first_token_lag_steps), as in disagg_layout and disagg_benchmark.
The loop's rate is the λ in (0, capacity) solving λ (TTFT + (O − 1) TPOT) = C; `bottleneck` names a pool run
    at 90% or more of its capacity. When even the capacity
    min(X × DP / t_p, Y × DP × B / ((O − 1) TPOT(B))) leaves clients waiting, the rate is that capacity and the
    waiting shows in TTFT: TTFT = C / λ − (O − 1) TPOT (the queue sits before the first token).
A benchmark that measured R rounds starting with a burst of C on an idle server (`burst_of` R: aiperf after its
    drained warm-up, InferenceMAX's benchmark_serving; planner.accuracy.bench_protocol) adds its first round: there
    every rank's C / (X × DP) prompts arrive together and wait (C / (X × DP) − 1) / 2 × t_p on average, so
    TTFT = (TTFT_burst + (R − 1) × TTFT) / R with TTFT_burst the steady TTFT with that wait (if longer).
Left out: prefill batching of several prompts per forward (it raises prefill capacity for short prompts), chunked
transfer overlap, and the tails (the silicon figures are means).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.capacity.disagg_layout import (
    HANDOFF_FIXED_S,
    TRANSFER_ENGINES,
    PoolLayout,
    first_token_steps,
    instance,
)
from planner.capacity.disagg_pools import decode_kv_limit, decode_step_s, kv_link, visible_transfer_s
from planner.core.scenario import Scenario
from planner.latency.perf_model import PerfModel


@dataclass(frozen=True)
class ClosedLoop:
    concurrency: int
    rate_per_s: float
    ttft_s: float
    tpot_s: float
    prefill_s: float  # one prompt on one prefill rank
    kv_transfer_s: float
    handoff_s: float
    decode_batch_per_rank: float
    bottleneck: str  # "none", "prefill" or "decode"


def closed_loop(
    s: Scenario,
    concurrency: int,
    prefill: PoolLayout,
    decode: PoolLayout,
    input_tokens: int,
    output_tokens: int,
    decode_batch: int,
    transfer: str = "nixl",
    handoff_fixed_s: float = HANDOFF_FIXED_S,
    burst_of: int = 0,
) -> ClosedLoop:
    """Mean TTFT and TPOT of the layout with `concurrency` clients (module note; `burst_of`: R measured rounds
    starting with a burst, 0 = the steady state only)."""
    rp, rd = instance(s, prefill, "prefill"), instance(s, decode, "decode")
    pm_p, pm_d = PerfModel(rp), PerfModel(rd)
    decode_batch = max(1, min(decode_batch, decode_kv_limit(rd, input_tokens, output_tokens)))  # KV pool
    base = kv_link(rp, "nic")
    link = type(base)(base.bytes_per_s * TRANSFER_ENGINES[transfer].efficiency, base.latency_s, base.label)
    t_p = float(pm_p.prefill(1, float(input_tokens)).total_s)
    transfer_s = float(visible_transfer_s(rp, float(input_tokens), link, pm_p))
    ranks_p, ranks_d = prefill.instances * prefill.dp, decode.instances * decode.dp
    steps, context = max(output_tokens - 1, 1), input_tokens + output_tokens / 2
    first_steps = first_token_steps(pm_d)

    def tpot_at(rate: float) -> tuple[float, float]:
        n = 1.0
        for _ in range(25):  # n = λ (O − 1) t(n) / ranks, a contraction for the rates below capacity
            n = min(max(rate * steps * decode_step_s(pm_d, n, context) / ranks_d, 1.0), decode_batch)
        return decode_step_s(pm_d, n, context), n

    burst_wait = max(concurrency / ranks_p - 1, 0.0) / 2 * t_p  # the first round's prompts queued together

    def ttft_at(rate: float, tpot: float) -> float:
        rho = rate * t_p / ranks_p
        wait = rho * t_p / (2 * (1 - rho)) if rho < 1 else math.inf
        wait = min(wait, concurrency * t_p / ranks_p)
        return pm_p.request_path_s + wait + t_p + transfer_s + handoff_fixed_s + first_steps * tpot

    def with_burst(ttft: float, steady_wait: float) -> float:
        if burst_of <= 0:
            return ttft
        return (ttft + max(burst_wait - steady_wait, 0.0) + (burst_of - 1) * ttft) / burst_of

    cap_p = ranks_p / t_p
    cap_d = ranks_d * decode_batch / (steps * decode_step_s(pm_d, decode_batch, context))
    cap = min(cap_p, cap_d)
    lo, hi = 0.0, cap * (1 - 1e-6)
    tp_hi, _ = tpot_at(hi)
    if hi * (ttft_at(hi, tp_hi) + steps * tp_hi) < concurrency:  # saturated: the queue sits before the first token
        tpot, n = tpot_at(cap)
        ttft = max(concurrency / cap - steps * tpot, ttft_at(0.0, tpot))
        ttft = with_burst(ttft, ttft - ttft_at(0.0, tpot))
        handoff = handoff_fixed_s + first_steps * tpot
        return ClosedLoop(concurrency, cap, ttft, tpot, t_p, transfer_s, handoff, n,
                          "prefill" if cap_p <= cap_d else "decode")  # fmt: skip
    for _ in range(40):  # λ (TTFT(λ) + (O − 1) TPOT(λ)) grows with λ: bisect for C
        mid = (lo + hi) / 2
        tp_mid, _ = tpot_at(mid)
        lo, hi = (mid, hi) if mid * (ttft_at(mid, tp_mid) + steps * tp_mid) < concurrency else (lo, mid)
    tpot, n = tpot_at(lo)
    ttft = ttft_at(lo, tpot)
    ttft = with_burst(ttft, ttft - ttft_at(0.0, tpot))
    handoff = handoff_fixed_s + first_steps * tpot
    busy = "prefill" if lo >= 0.9 * cap_p else "decode" if n >= 0.9 * decode_batch else "none"
    return ClosedLoop(concurrency, lo, ttft, tpot, t_p, transfer_s, handoff, n, busy)
