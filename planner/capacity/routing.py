"""A fleet of one scenario's replicas under each routing policy: what each router saves against round robin.

Glue from a resolved scenario to the fleet simulator (planner/sim/fleet.py), as planner/sim/serving.py's
`run_serving` is for one replica, and a comparison of the routers on the same traffic: prompt tokens computed
(prefill work the prefix cache saved), p95 TTFT and end-to-end latency, and the imbalance a router leaves.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from planner.core.scenario import Resolved
from planner.latency.efficiency import DEFAULT_ENGINE
from planner.sim.fleet import FleetResult, simulate_fleet
from planner.sim.fleet_summary import FleetSummary, fleet_summary
from planner.sim.router import ROUTERS
from planner.sim.serving import scheduler_config_for, step_cost_for
from planner.traffic.workload import Workload


def run_fleet(
    r: Resolved,
    workload: Workload,
    num_replicas: int,
    router: str = "round-robin",
    engine: str = DEFAULT_ENGINE,
    prefix_caching: bool | None = None,
    seed: int = 0,
    **overrides,
) -> FleetResult:
    """`workload` on `num_replicas` replicas of the scenario behind `router` (a pure function of its arguments)."""
    cfg = scheduler_config_for(r, enable_prefix_caching=prefix_caching, **overrides)
    return simulate_fleet(workload, cfg, step_cost_for(r, engine), num_replicas, router, seed)


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
    r: Resolved,
    workload: Workload,
    num_replicas: int,
    engine: str = DEFAULT_ENGINE,
    routers: tuple[str, ...] = ROUTERS,
    seed: int = 0,
) -> RouterComparison:
    """The same traffic on the same fleet under each router."""
    return RouterComparison(
        num_replicas,
        {name: fleet_summary(run_fleet(r, workload, num_replicas, name, engine, seed=seed)) for name in routers},
    )


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
