"""The aggregated (chunked-prefill) deployments disaggregation is compared with: capacity_plan at each shape
without PP, and the cheapest feasible one (planner.capacity.disagg module note)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.capacity.capacity_plan import capacity_plan
from planner.capacity.cost import SECONDS_PER_HOUR
from planner.core.scenario import Resolved, Scenario
from planner.core.workload import SLO, TrafficSpec


@dataclass(frozen=True)
class AggregatedOption:
    """One aggregated (chunked-prefill) TP or DP layout at the same SLO, from capacity_plan."""

    tp: int
    dp: int
    ep: int
    replicas: int | None  # instances of TP × DP GPUs
    gpus: int | None
    gpus_per_replica: int
    max_rate_per_replica: float
    usd_per_hour: float | None
    usd_per_million_output_tokens: float | None
    ttft_p95_s: float | None
    tpot_p95_s: float | None
    feasible: bool


def aggregated_best(
    s: Scenario,
    target: float,
    traffic: TrafficSpec,
    slo: SLO,
    headroom: float,
    prices: dict | None,
    rel_tol: float,
    shapes: list[Resolved],
) -> tuple[AggregatedOption | None, list[AggregatedOption]]:
    """capacity_plan at each shape without PP; the cheapest feasible one (by $/h, then GPUs).

    capacity_plan prices whole instances of TP × DP GPUs (it runs one DP rank at rate / DP). PP shapes are left
    out: the simulator runs one batch at a time and would miss the batches PP keeps in flight."""
    rows = []
    for r in shapes:
        d = r.deployment
        if d.pipeline_parallel_size > 1:
            continue
        plan = capacity_plan(
            s.model_copy(update={"deployment": d}),
            target,
            traffic,
            slo,
            headroom,
            prices,
            rel_tol,
            operating_point=True,
        )
        op = plan.operating_point
        instances = plan.cost.replicas if plan.cost else None
        gpus = instances * d.gpus_per_replica if instances else None
        usd_h = gpus * plan.usd_per_gpu_hour if gpus else None
        per_m = usd_h / (target * plan.mean_output_tokens * SECONDS_PER_HOUR) * 1e6 if usd_h else None
        rows.append(
            AggregatedOption(
                tp=d.tensor_parallel_size,
                dp=d.data_parallel_size,
                ep=d.expert_parallel_size,
                replicas=instances,
                gpus=gpus,
                gpus_per_replica=d.gpus_per_replica,
                max_rate_per_replica=plan.max_rate_per_replica,
                usd_per_hour=usd_h,
                usd_per_million_output_tokens=per_m,
                ttft_p95_s=op.ttft_p95_s if op else None,
                tpot_p95_s=op.tpot_p95_s if op else None,
                feasible=plan.feasible,
            )
        )
    ok = [row for row in rows if row.feasible and row.replicas]
    return (min(ok, key=lambda row: (row.usd_per_hour, row.gpus)) if ok else None), rows
