"""Bounds before search: a candidate's capacity upper bound and $/hour lower bound, from its price alone or from
one saturation run, and the ranking row of a candidate not searched (module note of planner/capacity/recommend.py)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.capacity.candidates import ROW_KEYS, Task
from planner.capacity.cost import price_of, replica_scenario, replicas_for
from planner.capacity.replicas import saturated_rps, traffic_replica
from planner.capacity.steady_state import STABILITY_MARGIN
from planner.core.scenario import resolve


@dataclass(frozen=True)
class Bound:
    """A candidate's capacity upper bound and $/hour lower bound from one saturation run (module note)."""

    saturated_rps: float | None  # one DP rank's; None: the batch holds the whole run (no bound but replicas >= 1)
    max_rate_upper_bound: float | None
    replicas_lower_bound: int
    usd_per_hour_lower_bound: float
    gpus_per_replica: int
    usd_per_gpu_hour: float
    price_date: str
    simulated: bool = True  # False: the price alone (one replica), before any saturation run


def price_bound(task: Task) -> Bound:
    """The $/hour lower bound before any run: one replica of the candidate's GPUs at their price."""
    r = resolve(replica_scenario(task.scenario))
    gpus_each, usd = r.deployment.gpus_per_replica, price_of(r, dict(task.prices))
    return Bound(None, None, 1, gpus_each * usd, gpus_each, usd, r.gpu.price_date, simulated=False)


def bound(task: Task) -> Bound:
    """Upper bound on the replica's capacity, lower bound on the deployment's $/hour (module note). The saturation
    run is one DP rank's (find_capacity's); an instance of DP ranks serves DP × that."""
    r = resolve(replica_scenario(task.scenario))
    sat = saturated_rps(traffic_replica(r, task.traffic), task.traffic)
    sat = float(sat) if sat else None
    dp = r.deployment.data_parallel_size
    ub = (1 - STABILITY_MARGIN) * sat * dp if sat else None
    n = replicas_for(task.target_rps, ub, task.headroom) if ub else 1
    gpus_each, usd = r.deployment.gpus_per_replica, price_of(r, dict(task.prices))
    return Bound(sat, ub, n, n * gpus_each * usd, gpus_each, usd, r.gpu.price_date)


def _pruned_row(task: Task, b: Bound, cutoff_usd: float) -> dict:
    dep = task.scenario.deployment
    row = dict.fromkeys(ROW_KEYS)
    row.update(
        id=f"{task.scenario.gpu} · {dep.weights} · TP{dep.tensor_parallel_size}",
        gpu=task.scenario.gpu,
        weights=dep.weights,
        tp=dep.tensor_parallel_size,
        gpus_per_replica=b.gpus_per_replica,
        usd_per_gpu_hour=b.usd_per_gpu_hour,
        feasible=False,
        searched=False,
        operating_rate_per_replica=None,
        price_date=b.price_date,
        saturated_rps=b.saturated_rps,
        max_rate_upper_bound=b.max_rate_upper_bound,
        usd_per_hour_lower_bound=b.usd_per_hour_lower_bound,
        bound_run=b.simulated,
        reason=_pruned_reason(b, cutoff_usd),
    )
    return row


def _pruned_reason(b: Bound, cutoff_usd: float) -> str:
    runner_up = f"dearer than the runner-up's ${cutoff_usd:,.2f}/hour"
    if not b.simulated:  # never run: one replica already costs more
        return (
            f"not searched: one replica ({b.gpus_per_replica} GPU{'s' if b.gpus_per_replica > 1 else ''} at "
            f"${b.usd_per_gpu_hour:,.2f}/hour) costs ${b.usd_per_hour_lower_bound:,.2f}/hour, {runner_up}"
        )
    limit = (
        f"at most {b.max_rate_upper_bound:,.3g} req/s per replica (95% of its saturated throughput), so "
        if b.max_rate_upper_bound
        else ""
    )
    usd = f"${b.usd_per_hour_lower_bound:,.2f}/hour"
    return f"not searched: {limit}≥ {b.replicas_lower_bound} replicas at ≥ {usd}, {runner_up}"
