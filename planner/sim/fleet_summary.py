"""Headline figures of a fleet run: fleet percentiles over every request, each replica's own summary, imbalance.

The fleet's latency keys are those of one replica (`simulate --json`: ttft_s, tpot_s, e2e_s, queue_s with mean,
p50, p95, p99 in seconds); `per_replica` holds each replica's full ServingSummary (planner/sim/serving.py).
Imbalance is max / mean over the replicas (1 = even): of requests sent, and of prompt tokens computed (prefill
work after prefix hits, where a router that piles shared prefixes on one replica shows).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from planner.sim.fleet import FleetResult
from planner.sim.records import LatencyStats, ServingSummary, latencies, summary
from planner.sim.run_summary import _clean, latency_stats, result_summary, steady_rates


@dataclass(frozen=True)
class FleetSummary:
    ttft_s: LatencyStats
    tpot_s: LatencyStats
    e2e_s: LatencyStats
    queue_s: LatencyStats
    router: str
    num_replicas: int
    throughput_tokens_per_s: float | None
    throughput_requests_per_s: float | None
    offered_requests_per_s: float | None
    served_requests_per_s: float | None
    goodput_requests_per_s: float | None
    slo_attainment: float | None
    num_requests: int
    completed: int
    rejected: int
    preemptions: int
    prefix_hit_rate: float  # prompt tokens served from the prefix cache / prompt tokens of admitted requests
    prefill_tokens: int  # prompt tokens computed fleet-wide (after prefix hits)
    request_imbalance: float | None
    prefill_imbalance: float | None
    mean_in_system: float  # requests running or waiting, time average summed over the replicas (Little's L)
    simulated_s: float
    makespan_s: float
    seed: int
    workload_seed: int | None
    source: str
    wall_s: float
    per_replica: tuple[ServingSummary, ...]

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "per_replica"}
        out["per_replica"] = [dict(replica=k, **s.to_dict()) for k, s in enumerate(self.per_replica)]
        return out


def prefill_tokens(res) -> int:
    """Prompt tokens computed: admitted prompts minus shared-prefix hits."""
    r = res.requests
    admitted = r.first_scheduled_s == r.first_scheduled_s
    return int(r.prompt_tokens[admitted].sum() - r.prefix_hit_tokens.sum())


def _imbalance(values) -> float | None:
    values = np.asarray(values, dtype=float)
    mean = values.mean() if len(values) else 0.0
    return float(values.max() / mean) if mean > 0 else None


def fleet_summary(res: FleetResult, slo_ttft_s: float | None = None, slo_tpot_s: float | None = None) -> FleetSummary:
    fleet = res.fleet
    flat = summary(fleet, slo_ttft_s, slo_tpot_s)
    lat = latencies(fleet)
    offered, served = steady_rates(fleet)
    per_replica = tuple(result_summary(r, slo_ttft_s, slo_tpot_s) for r in res.replicas)
    out = dict(
        **latency_stats(lat),
        router=res.router,
        num_replicas=len(res.replicas),
        throughput_tokens_per_s=flat["throughput_tokens_per_s"],
        throughput_requests_per_s=flat["throughput_requests_per_s"],
        offered_requests_per_s=offered,
        served_requests_per_s=served,
        goodput_requests_per_s=flat["goodput_requests_per_s"],
        slo_attainment=flat["slo_attainment"],
        num_requests=flat["num_requests"],
        completed=flat["num_finished"],
        rejected=flat["num_rejected"],
        preemptions=flat["num_preemptions"],
        prefix_hit_rate=flat["prefix_hit_rate"],
        prefill_tokens=prefill_tokens(fleet),
        request_imbalance=_imbalance([s.num_requests for s in per_replica]),
        prefill_imbalance=_imbalance([prefill_tokens(r) for r in res.replicas]),
        mean_in_system=res.mean_in_system,
        simulated_s=fleet.end_s,
        makespan_s=flat["makespan_s"],
        seed=fleet.seed,
        workload_seed=fleet.workload.seed,
        source=fleet.workload.source,
        wall_s=fleet.wall_s,
    )
    return FleetSummary(**{k: _clean(v) for k, v in out.items()}, per_replica=per_replica)
