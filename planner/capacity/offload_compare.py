"""KV offload on against off for one deployment: replicas, $, p95 TTFT and prefix hit rate, and whether it pays.

Two capacity searches on the same requests (capacity_plan, with and without the tiers), then one run of a replica
at each plan's operating point (the target rate / replicas) for its p95 TTFT and hit rates. Offload PAYS when it
needs fewer replicas for the target at the SLO (the saving is replicas x GPUs x $ per GPU-hour); when the replica
count is the same, it is a latency choice (p95 TTFT at the operating point), and it costs replicas when reloads
lengthen steps more than the hits save. It can only pay on traffic that comes back to a prefix after the GPU has
let it go: a reuse distance longer than the GPU prefix cache and shorter than the CPU (and SSD) tiers, with a
reload (latency + bytes / link rate) shorter than the prefill it replaces.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from planner.capacity.capacity_plan import CapacityPlan, capacity_plan
from planner.capacity.cost import replica_scenario
from planner.capacity.probe_workload import workload_at
from planner.capacity.replicas import traffic_replica
from planner.capacity.routing import run_fleet, size_fleet
from planner.core.scenario import Scenario, resolve
from planner.core.workload import SLO, TrafficSpec
from planner.sim.offload_plan import KVOffload
from planner.sim.records import summary
from planner.sim.serving import Replica, run_serving
from planner.traffic.workload import Workload


@dataclass(frozen=True)
class OffloadSide:
    offload: bool
    replicas: int | None  # None when the SLO is out of reach
    usd_per_hour: float | None
    max_rate_per_replica: float
    ttft_p95_s: float | None  # one replica at the operating point (target / replicas)
    prefix_hit_rate: float  # every tier together (GPU, CPU, SSD)
    offload_hit_rate: float  # from the CPU and SSD tiers


@dataclass(frozen=True)
class OffloadComparison:
    off: OffloadSide
    on: OffloadSide
    replicas_saved: int | None  # off - on (> 0: offload pays)
    usd_per_hour_saved: float | None
    pays: bool
    verdict: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _side(s: Scenario, plan: CapacityPlan, traffic: TrafficSpec, kv: KVOffload | None) -> OffloadSide:
    r = resolve(replica_scenario(s))
    n = plan.cost.replicas if plan.cost else None
    ttft = hit = tier_hit = None
    if n:
        rate = plan.target_rate / n / plan.data_parallel_size
        res = run_serving(traffic_replica(r, traffic, offload=kv), workload_at(traffic, rate))
        flat = summary(res)
        hit = flat["prefix_hit_rate"]
        v = flat.get("ttft_p95_s")
        ttft = float(v) if v is not None and v == v else None  # NaN: nothing finished
        if res.offload is not None:
            tokens = sum(res.offload.hit_tokens(t) for t in res.offload.hit_entries)
            tier_hit = hit * tokens / max(float(res.requests.prefix_hit_tokens.sum()), 1.0)
    usd = plan.cost.usd_per_hour if plan.cost else None
    return OffloadSide(kv is not None, n, usd, plan.max_rate_per_replica, ttft, hit or 0.0, tier_hit or 0.0)


def _verdict(
    off: OffloadSide, on: OffloadSide, where: str = "at the operating point"
) -> tuple[int | None, float | None, bool, str]:
    if on.replicas is None:
        return None, None, False, "with offload one replica cannot meet the SLO at any load"
    if off.replicas is None:
        return None, None, True, f"offload pays: without it the SLO is out of reach; with it {on.replicas} replicas"
    saved = off.replicas - on.replicas
    usd = off.usd_per_hour - on.usd_per_hour
    ttft = ""
    if off.ttft_p95_s is not None and on.ttft_p95_s is not None:
        ttft = f"; p95 TTFT {off.ttft_p95_s * 1e3:,.0f} → {on.ttft_p95_s * 1e3:,.0f} ms {where}"
    hits = f"; prefix hit rate {off.prefix_hit_rate:.1%} → {on.prefix_hit_rate:.1%}"
    if saved > 0:
        return saved, usd, True, f"offload pays: {saved} fewer replicas, ${usd:,.2f}/hour less{hits}{ttft}"
    if saved < 0:
        return saved, usd, False, f"offload costs {-saved} more replicas (${-usd:,.2f}/hour){hits}{ttft}"
    return 0, 0.0, False, f"offload does not change the replica count{hits}{ttft}"


def compare_offload(
    s: Scenario,
    target_rps: float,
    traffic: TrafficSpec,
    slo: SLO,
    headroom: float,
    prices: dict[str, float] | None,
    rel_tol: float,
    kv: KVOffload,
    **plan_kw,
) -> tuple[CapacityPlan, OffloadComparison]:
    """(the plan with offload, offload on against off) for `target_rps` at the SLO (module note); `plan_kw`: the
    rest of capacity_plan's keywords (speculative decoding, latency bands), the same on both sides."""
    plan_off = capacity_plan(s, target_rps, traffic, slo, headroom, prices, rel_tol, **plan_kw)
    plan_on = capacity_plan(s, target_rps, traffic, slo, headroom, prices, rel_tol, offload=kv, **plan_kw)
    off, on = _side(s, plan_off, traffic, None), _side(s, plan_on, traffic, kv)
    return plan_on, OffloadComparison(off, on, *_verdict(off, on))


def _fleet_side(replica, workload, router: str, slo_ttft_s: float, usd: float, max_replicas: int) -> OffloadSide:
    size = size_fleet(replica, workload, router, slo_ttft_s, None, usd, max_replicas)
    s = size.at_size
    tier_hit = 0.0
    if size.replicas and replica.settings.offload is not None:
        res = run_fleet(replica, workload, size.replicas, router).fleet
        prompt = float(res.requests.prompt_tokens[~np.isnan(res.requests.first_scheduled_s)].sum())
        tier_hit = sum(res.offload.hit_tokens(t) for t in res.offload.hit_entries) / prompt if prompt else 0.0
    return OffloadSide(
        replica.settings.offload is not None,
        size.replicas,
        size.usd_per_hour,
        0.0,  # a fleet is sized by replicas, not by a rate per replica
        None if s is None else s.ttft_s.p95,
        0.0 if s is None else s.prefix_hit_rate,
        tier_hit,
    )


def compare_fleet_offload(
    replica: Replica,
    workload: Workload,
    router: str,
    kv: KVOffload,
    slo_ttft_s: float,
    usd_per_gpu_hour: float,
    max_replicas: int = 64,
) -> OffloadComparison:
    """The fewest replicas behind `router` within the p95 TTFT target, with and without the tiers (the Fleet page)."""
    off = _fleet_side(replica.with_settings(offload=None), workload, router, slo_ttft_s, usd_per_gpu_hour, max_replicas)
    on = _fleet_side(replica.with_settings(offload=kv), workload, router, slo_ttft_s, usd_per_gpu_hour, max_replicas)
    return OffloadComparison(off, on, *_verdict(off, on, "at each side's fleet size"))
