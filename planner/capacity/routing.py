"""A fleet of one scenario's replicas under each routing policy: what each router saves against round robin.

Glue from a resolved scenario to the fleet simulator (planner/sim/fleet.py), as planner/sim/serving.py's
`run_serving` is for one replica, and a comparison of the routers on the same traffic: prompt tokens computed
(prefill work the prefix cache saved), p95 TTFT and end-to-end latency, and the imbalance a router leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from planner.sim.fleet import FleetResult, simulate_fleet
from planner.sim.fleet_summary import FleetSummary, fleet_summary
from planner.sim.router import ROUTERS
from planner.sim.serving import Replica
from planner.traffic.workload import Workload


def run_fleet(
    replica: Replica,
    workload: Workload,
    num_replicas: int,
    router: str = "round-robin",
    progress: Callable[[int], None] | None = None,
) -> FleetResult:
    """`workload` on `num_replicas` copies of `replica` (its scenario and settings) behind `router` (a pure function
    of its arguments; replica k runs with the settings' seed + k). `progress(requests routed)`: simulate_fleet's."""
    return simulate_fleet(
        workload,
        replica.scheduler_config,
        replica.step_cost,
        num_replicas,
        router,
        replica.settings.seed,
        replica.draft_cost,
        progress=progress,
    )


@dataclass(frozen=True)
class RouterComparison:
    num_replicas: int
    summaries: dict[str, FleetSummary]  # router -> its fleet summary, same traffic and seed

    def table(self) -> pd.DataFrame:
        """One row per router: hit rate, prompt tokens computed and saved against round robin, p95s, imbalance."""
        base = self.summaries.get("round-robin")
        rows = []
        for router, s in self.summaries.items():
            saved = 1 - s.prefill_tokens / base.prefill_tokens if base and base.prefill_tokens else None
            rows.append(
                dict(
                    router=router,
                    prefix_hit_rate=s.prefix_hit_rate,
                    prefill_tokens=s.prefill_tokens,
                    prefill_saved_vs_round_robin=saved,
                    ttft_p95_s=s.ttft_s.p95,
                    e2e_p95_s=s.e2e_s.p95,
                    tpot_p95_s=s.tpot_s.p95,
                    request_imbalance=s.request_imbalance,
                    completed=s.completed,
                )
            )
        return pd.DataFrame(rows)


def compare_routers(
    replica: Replica,
    workload: Workload,
    num_replicas: int,
    routers: tuple[str, ...] = ROUTERS,
    progress: Callable[[int, int], None] | None = None,
) -> RouterComparison:
    """The same traffic on the same fleet under each router; `progress(done, total)` counts requests routed over
    all routers (total = routers × requests), called during each run and after it."""
    total, summaries = len(routers) * workload.num_requests, {}
    for k, name in enumerate(routers):
        done = k * workload.num_requests
        step = None if progress is None else (lambda routed, done=done: progress(done + routed, total))
        summaries[name] = fleet_summary(run_fleet(replica, workload, num_replicas, name, step))
        if progress is not None:
            progress(done + workload.num_requests, total)
    return RouterComparison(num_replicas, summaries)


def replica_frame(s: FleetSummary) -> pd.DataFrame:
    """One row per replica: requests, hit rate, p95 TTFT and e2e, mean batch, KV use, preemptions."""
    return pd.DataFrame(
        [
            dict(
                replica=k,
                requests=p.num_requests,
                prefix_hit_rate=p.prefix_hit_rate,
                ttft_p95_s=p.ttft_s.p95,
                e2e_p95_s=p.e2e_s.p95,
                mean_running=p.mean_running,
                mean_kv_use=p.mean_kv_use,
                preemptions=p.preemptions,
            )
            for k, p in enumerate(s.per_replica)
        ]
    )


# --- sizing the fleet under each router -----------------------------------------------------------------------
@dataclass(frozen=True)
class FleetSize:
    """The fewest replicas that serve the traffic under one router within the p95 SLO, and what they cost."""

    router: str
    replicas: int | None  # None: not within max_replicas
    usd_per_hour: float | None  # replicas x GPUs per replica x $/GPU-hour
    at_size: FleetSummary | None
    probes: tuple[tuple[int, bool], ...]  # (replicas, met the SLO) in the order they ran

    def to_dict(self) -> dict:
        return dict(
            router=self.router,
            replicas=self.replicas,
            usd_per_hour=self.usd_per_hour,
            ttft_p95_s=None if self.at_size is None else self.at_size.ttft_s.p95,
            tpot_p95_s=None if self.at_size is None else self.at_size.tpot_s.p95,
            prefix_hit_rate=None if self.at_size is None else self.at_size.prefix_hit_rate,
            probes=[list(p) for p in self.probes],
        )


def meets_slo(s: FleetSummary, slo_ttft_s: float | None, slo_tpot_s: float | None) -> bool:
    """Every request served, and the fleet's p95 TTFT and TPOT within their targets (None: no target)."""
    if s.completed < s.num_requests or s.ttft_s.p95 is None:
        return False
    ok_ttft = slo_ttft_s is None or s.ttft_s.p95 <= slo_ttft_s
    ok_tpot = slo_tpot_s is None or s.tpot_s.p95 is None or s.tpot_s.p95 <= slo_tpot_s
    return ok_ttft and ok_tpot


def smallest_fleet(meets, max_replicas: int) -> int | None:
    """The fewest replicas n with meets(n) True: double from 1 until it holds, then bisect (assumes more replicas
    never hurt); None if even max_replicas does not."""
    hi = 1
    while not meets(hi):
        if hi >= max_replicas:
            return None
        hi = min(2 * hi, max_replicas)
    lo = hi // 2  # meets(lo) is False (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


def size_fleet(
    replica: Replica,
    workload: Workload,
    router: str,
    slo_ttft_s: float | None,
    slo_tpot_s: float | None,
    usd_per_gpu_hour: float,
    max_replicas: int = 64,
) -> FleetSize:
    """The fewest replicas serving `workload` (the fleet's whole traffic) under `router` within the SLO."""
    runs: dict[int, FleetSummary] = {}
    probes: list[tuple[int, bool]] = []

    def meets(n: int) -> bool:
        runs[n] = fleet_summary(run_fleet(replica, workload, n, router))
        probes.append((n, meets_slo(runs[n], slo_ttft_s, slo_tpot_s)))
        return probes[-1][1]

    n = smallest_fleet(meets, max_replicas)
    usd = None if n is None else n * replica.resolved.deployment.gpus_per_replica * usd_per_gpu_hour
    return FleetSize(router, n, usd, runs.get(n), tuple(probes))
