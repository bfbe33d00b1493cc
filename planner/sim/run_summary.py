"""One serving run's summary: the `simulate --json` contract (latencies as mean, p50, p95, p99 in seconds, then
throughput, goodput, SLO attainment, the KV pool's use), the steady arrival and completion rates, and the flat row
of a sweep table (planner.sim.serving runs the replica; planner.sim.records holds the records)."""

from __future__ import annotations

import math

import numpy as np

from planner.sim.records import LatencyStats, ServingSummary, SimResult, latencies, stats, summary

LATENCY_KEYS = {"ttft_s": "ttft_s", "tpot_s": "tpot_s", "e2e_s": "e2e_s", "queue_s": "queue_wait_s"}
STAT_KEYS = ("mean", "p50", "p95", "p99")


def _clean(value):
    """NaN/inf -> None so the summary is valid JSON; numpy scalars -> Python numbers."""
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def latency_stats(lat: dict) -> dict[str, LatencyStats]:
    """The summary's latency keys (LATENCY_KEYS) as mean, p50, p95, p99 of `lat` (planner.sim.records.latencies)."""
    return {
        key: LatencyStats(**{k: _clean(v) for k, v in stats(lat[src]).items()}) for key, src in LATENCY_KEYS.items()
    }


def steady_rates(res: SimResult, lo_q: float = 0.1, hi_q: float = 0.9) -> tuple[float | None, float | None]:
    """(arrivals/s, completions/s) over the window between the 10th and 90th percentile arrival times.

    In steady state both equal the offered rate; an overloaded server completes fewer than arrive. Counting inside
    the window avoids the edge effect of a finite run (the last replies land after the last arrival)."""
    arr = res.requests.arrival_s
    arr = arr[~np.isnan(arr)]
    if len(arr) < 10:
        return None, None
    t0, t1 = np.quantile(arr, [lo_q, hi_q])
    if t1 <= t0:
        return None, None
    fin = res.requests.finish_s
    arrived = np.count_nonzero((arr >= t0) & (arr < t1))
    completed = np.count_nonzero((fin >= t0) & (fin < t1))
    return arrived / float(t1 - t0), completed / float(t1 - t0)


def result_summary(res: SimResult, slo_ttft_s: float | None = None, slo_tpot_s: float | None = None) -> ServingSummary:
    """Headline figures of one run: the CLI contract (latencies as mean, p50, p95, p99 in seconds) + more."""
    flat = summary(res, slo_ttft_s, slo_tpot_s)
    lat = latencies(res)
    cfg = res.config
    offered, served = steady_rates(res)
    out = dict(
        **latency_stats(lat),
        throughput_tokens_per_s=flat["throughput_tokens_per_s"],
        throughput_requests_per_s=flat["throughput_requests_per_s"],
        offered_requests_per_s=offered,
        served_requests_per_s=served,
        goodput_requests_per_s=flat["goodput_requests_per_s"],
        goodput_tokens_per_s=flat["goodput_tokens_per_s"],
        slo_attainment=flat["slo_attainment"],
        slo_ttft_s=cfg.slo_ttft_s if slo_ttft_s is None else slo_ttft_s,
        slo_tpot_s=cfg.slo_tpot_s if slo_tpot_s is None else slo_tpot_s,
        num_requests=flat["num_requests"],
        completed=flat["num_finished"],
        rejected=flat["num_rejected"],
        rejected_queue_full=flat["num_rejected_queue_full"],
        rejected_too_long=flat["num_rejected_too_long"],
        preemptions=flat["num_preemptions"],
        prefix_hit_rate=flat["prefix_hit_rate"],
        simulated_s=res.end_s,
        makespan_s=flat["makespan_s"],
        num_steps=flat["num_steps"],
        kv_pool_blocks=flat["kv_pool_blocks"],
        kv_pool_tokens=cfg.kv_pool_tokens,
        peak_kv_use=res.peak_kv_blocks / cfg.num_gpu_blocks,
        mean_kv_use=flat["mean_kv_use"],
        mean_running=flat["mean_running"],
        mean_waiting=flat["mean_waiting"],
        max_waiting=flat["max_waiting"],
        max_running=int(res.steps.num_running.max()) if len(res.steps) else 0,
        max_num_seqs=cfg.max_num_seqs,
        max_num_batched_tokens=cfg.max_num_batched_tokens,
        seed=res.seed,
        workload_seed=res.workload.seed,
        source=res.workload.source,
        wall_s=res.wall_s,
    )
    return ServingSummary(**{k: _clean(v) for k, v in out.items()})


def flat_row(s: ServingSummary) -> dict:
    """A summary as one flat row (ttft_p95_s, ...), for sweep tables and charts."""
    row = {}
    for key, value in s.to_dict().items():
        if isinstance(value, dict):
            base = key.removesuffix("_s")
            row.update({f"{base}_{stat}_s": value[stat] for stat in STAT_KEYS})
        else:
            row[key] = value
    return row
