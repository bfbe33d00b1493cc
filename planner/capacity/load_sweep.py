"""Load testing one replica (primer §9): traffic profiles, a rate sweep, its knee, and open vs closed loop.

Knee (the capacity per replica): walk the sweep from the lowest rate up; a point is healthy when it passes the
steady-state verdict that `capacity` and `recommend` use (planner/capacity/steady_state.py: warm-up and drain
discarded, a waiting queue that does not grow, p95 TTFT / TPOT within the SLO). The knee is the last point of
that healthy run (the first unhealthy point ends it, even if a later one looks fine again); None when the lowest
point already fails.

Open vs closed loop: the same server, the same lengths; the closed loop's users are sized by Little's law as a
load tester would size them from a quiet server, N = ceil(λ × (think + R₁)), R₁ = the reply time of one
mean-sized request alone on the server. When the server slows, each user waits for the slower reply before
sending again, so the closed loop offers less than λ: it never builds the queue that open-loop traffic does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.capacity.steady_state import (
    SATURATION_RATE_PER_S,
    judge,
    saturated_throughput_rps,
)
from planner.core.errors import InputError
from planner.core.workload import SLO
from planner.latency.perf_model import PerfModel
from planner.sim.records import ServingSummary, SimResult, meets_slo
from planner.sim.run_summary import flat_row, result_summary
from planner.sim.serving import Replica, run_serving
from planner.traffic.generators import closed_loop, open_loop
from planner.traffic.profiles import mean_lengths


def single_request_s(pm: PerfModel, prompt_tokens: float, output_tokens: float) -> float:
    """R₁: one request alone on the server = prefill + (N − 1) decode steps at batch 1 (mid-answer context)."""
    prefill = float(pm.prefill(1, prompt_tokens).total_s)
    decode = float(pm.decode(1, prompt_tokens + output_tokens / 2).total_s)
    return prefill + max(output_tokens - 1, 0) * decode


def estimate_capacity_rps(
    replica: Replica, prompt_tokens: float, output_tokens: float, cached_share: float = 0.0
) -> float:
    """Rough requests/s one replica sustains: batch b = min(max_num_seqs, KV pool / tokens per request); each
    request costs its prefill plus (output / b) batch-b decode steps; `cached_share` of the prompt tokens come from
    the prefix cache (a prompt pool's repeats: probe_workload.repeated_prompt_share) and are not prefilled. Only a
    starting point for the sweep range."""
    pm, cfg = replica.step_cost.pm, replica.scheduler_config
    per_request = max(prompt_tokens + output_tokens, 1.0)
    b = max(1, min(cfg.max_num_seqs, int(cfg.kv_pool_tokens // per_request)))
    cached = prompt_tokens * min(max(cached_share, 0.0), 1.0) if replica.settings.prefix_caching else 0.0
    prefill_s = float(pm.prefill(1, max(prompt_tokens - cached, 1.0), cached).total_s)
    decode_s = float(pm.decode(b, prompt_tokens + output_tokens / 2).total_s)
    return 1.0 / (prefill_s + output_tokens * decode_s / b)


def settings_slo(replica: Replica) -> SLO:
    """The SLO of the replica's goodput settings (SLO's defaults where a target is unset)."""
    s = replica.settings
    return SLO(**{k: v for k, v in (("ttft_p95_s", s.slo_ttft_s), ("tpot_p95_s", s.slo_tpot_s)) if v})


def rate_sweep(replica: Replica, rates, workload_for_rate, progress=None, slo: SLO | None = None) -> list[dict]:
    """One flat summary row per rate (ascending), each from `workload_for_rate(rate)` on the same replica, with the
    steady-state verdict (`sustains`, `reason`) against `slo` (default: the replica's settings_slo);
    `progress(done, total)` is called after every point."""
    rates = sorted(float(x) for x in rates)
    if not rates or any(not (math.isfinite(x) and x > 0) for x in rates):
        raise InputError("rates", "need one or more rates > 0")
    slo = slo or settings_slo(replica)
    saturated = saturated_throughput_rps(run_serving(replica, workload_for_rate(SATURATION_RATE_PER_S)))
    rows = []
    for k, rate in enumerate(rates, start=1):
        res = run_serving(replica, workload_for_rate(rate))
        verdict = judge(res, slo, rate, saturated)
        rows.append(
            {
                "rate_per_s": rate,
                **flat_row(result_summary(res)),
                "sustains": verdict.sustains,
                "reason": verdict.reason,
                "queue_growth_per_s": verdict.queue_growth_per_s,
                "saturated_rps": saturated,
                "goodput_served_requests_per_s": steady_goodput_rps(res, slo),
            }
        )
        if progress is not None:
            progress(k, len(rates))
    return rows


def steady_goodput_rps(res: SimResult, slo: SLO) -> float | None:
    """Completions/s that met the SLO's p95 TTFT and TPOT targets (per request), over the same window as
    `served_requests_per_s` (steady_rates: arrivals between their 10th and 90th percentiles), so it never exceeds
    what was served. (The run's goodput_requests_per_s counts over the whole makespan, drain included.)"""
    arr = res.requests.arrival_s
    arr = arr[~np.isnan(arr)]
    if len(arr) < 10:
        return None
    t0, t1 = (float(x) for x in np.quantile(arr, [0.1, 0.9]))
    if t1 <= t0:
        return None
    done = res.requests.finished
    fin = res.requests.finish_s[done]
    good = meets_slo(res, slo.ttft_p95_s, slo.tpot_p95_s)
    return int(np.count_nonzero(good & (fin >= t0) & (fin < t1))) / (t1 - t0)


def find_knee(rows: list[dict]) -> dict | None:
    """The last row of the healthy run (rows with `sustains`) from the lowest rate up (module note), or None."""
    knee = None
    for row in sorted(rows, key=lambda row: row["rate_per_s"]):
        if not row.get("sustains"):
            break
        knee = row
    return knee


def users_for_rate(rate_per_s: float, think_time_s: float, reply_s: float) -> int:
    """Little's law for a closed loop: N users each cycling think + reply offer N / (think + reply) req/s."""
    return max(1, math.ceil(rate_per_s * (think_time_s + reply_s) - 1e-9))


@dataclass(frozen=True)
class OpenVsClosed:
    """The same server under open-loop arrivals at λ and closed-loop users sized to offer λ."""

    rate_per_s: float
    num_users: int  # ⌈λ × (think + one quiet reply)⌉
    think_time_s: float
    single_reply_s: float  # one request's reply on a quiet server
    open: ServingSummary
    closed: ServingSummary
    open_result: SimResult
    closed_result: SimResult


def open_vs_closed(
    replica: Replica, rate_per_s: float, num_requests: int, prompt: str, output: str, think_time_s: float = 5.0
) -> OpenVsClosed:
    """The same server under open-loop Poisson at λ and closed-loop users sized to offer λ (module note); both
    workloads are seeded with the replica's seed."""
    seed = replica.settings.seed
    open_wl = open_loop(num_requests, rate_per_s, prompt, output, "poisson", 1.0, seed)
    mean_prompt, mean_output = mean_lengths(open_wl)
    reply_s = single_request_s(replica.step_cost.pm, mean_prompt, mean_output)
    users = users_for_rate(rate_per_s, think_time_s, reply_s)
    closed_wl = closed_loop(users, num_requests, think_time_s, prompt, output, seed=seed)
    open_res, closed_res = run_serving(replica, open_wl), run_serving(replica, closed_wl)
    open_summary, closed_summary = result_summary(open_res), result_summary(closed_res)
    return OpenVsClosed(rate_per_s, users, think_time_s, reply_s, open_summary, closed_summary, open_res, closed_res)
