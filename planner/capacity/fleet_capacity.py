"""Capacity under a router: the fewest replicas whose FLEET simulation meets the SLO at the target rate, for each
routing policy, and what each policy saves against round robin (issue 26 #1).

`capacity` sizes a deployment from one replica: replicas = ceil(target × headroom / one replica's capacity), as if
requests were spread evenly and no request met its prefix on another replica. Here the fleet itself is
simulated (planner/sim/fleet.py): `n` replicas behind a router serve the whole traffic at target × headroom
(the headroom is spare, as in `capacity`), and the smallest n that meets the SLO is searched for each router.

The search starts from one-replica sizing (`start`, `capacity`'s replica count) and gallops from there: down
1, 2, 4… while the smaller fleet still meets the SLO, or up 1, 2, 4… until it does, then bisects (more replicas
are assumed never to hurt). When the one-replica count is right it costs two fleet runs per router; at most
MAX_FLEET_PROBES runs per router keep the CPU bounded (the answer is then None: not found within the budget).

"Meets the SLO" is `capacity`'s steady-state verdict applied to the fleet (capacity/steady_state.py
`judge_fleet`): warm-up and drain discarded, p95 TTFT, p95 TPOT and p99 end-to-end of the requests arriving in the
steady window over every replica within target, and the waiting queues, summed over the replicas, not growing by
more than 5% of the offered rate per second. A fleet of n replicas simulates n × `num_requests` requests (each
replica runs as long as one probe of `capacity` does, so the steady window is as long), with n the one-replica
sizing and at most MAX_FLEET_REQUESTS in all (the CPU of a plan is then at most about
MAX_FLEET_REQUESTS / num_requests probes per fleet run).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.capacity.candidates import candidates
from planner.capacity.cost import price_of, replica_scenario
from planner.capacity.probe_workload import workload_at
from planner.capacity.replicas import traffic_replica
from planner.capacity.routing import FleetSize, run_fleet
from planner.capacity.steady_state import judge_fleet
from planner.core.scenario import Resolved, Scenario, resolve
from planner.core.workload import SLO, TrafficSpec
from planner.sim.fleet import MAX_REPLICAS
from planner.sim.fleet_summary import FleetSummary, fleet_summary
from planner.sim.router import ROUTERS
from planner.sim.serving import Replica

MAX_FLEET_PROBES = 10  # fleet runs per router: gallop + bisection from a start within 2^4 of the answer
MAX_FLEET_REQUESTS = 8_000  # requests per fleet run: ~8 probes of 1,000 requests, about 5 s on one core


def gallop_smallest(meets, start: int, max_replicas: int, max_probes: int = MAX_FLEET_PROBES) -> int | None:
    """The fewest n in 1..max_replicas with meets(n), searched from `start`: gallop down (n - 1, n - 2, n - 4…)
    while it holds, or up (n + 1, n + 2, n + 4…) until it holds, then bisect; None when max_replicas does not
    hold or the probes run out (meets is assumed monotone: more replicas never hurt)."""
    probes = 0

    def ok(n: int) -> bool:
        nonlocal probes
        probes += 1
        return meets(n)

    n = min(max(start, 1), max_replicas)
    lo, hi, step = 0, None, 1  # meets(lo) False (0: none), meets(hi) True
    if ok(n):
        hi = n
        while hi > 1 and probes < max_probes:
            m = max(hi - step, 1)
            if not ok(m):
                lo = m
                break
            hi, step = m, 2 * step
    else:
        lo = n
        while lo < max_replicas and probes < max_probes:
            m = min(lo + step, max_replicas)
            if ok(m):
                hi = m
                break
            lo, step = m, 2 * step
        if hi is None:
            return None
    while hi - lo > 1:
        if probes >= max_probes:
            return None
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def size_under_router(
    replica: Replica,
    workload,
    router: str,
    slo: SLO,
    usd_per_gpu_hour: float,
    start: int,
    max_replicas: int,
    ranks_per_replica: int = 1,
    session_rate: float | None = None,
) -> FleetSize:
    """The fewest replicas of `replica` serving `workload` (the fleet's traffic) under `router` within `slo`.
    With data parallelism a replica (one engine instance) is `ranks_per_replica` DP ranks, each simulated as one
    replica behind the router (capacity_plan's search runs one rank too). `session_rate`: for sessions, the rate a
    run must offer in its steady window (steady_state.short_of_rate)."""
    runs: dict[int, FleetSummary] = {}
    probes: list[tuple[int, bool]] = []

    def meets(n: int) -> bool:
        res = run_fleet(replica, workload, n * ranks_per_replica, router)
        runs[n] = fleet_summary(res)
        probes.append((n, judge_fleet(res, slo, session_rate).sustains))
        return probes[-1][1]

    n = gallop_smallest(meets, start, max_replicas)
    usd = None if n is None else n * replica.resolved.deployment.gpus_per_replica * usd_per_gpu_hour
    return FleetSize(router, n, usd, runs.get(n), tuple(probes))


@dataclass(frozen=True)
class RoutingPlan:
    """Replicas and $ under each router for one deployment at target × headroom; `router` is the user's choice."""

    router: str
    fleet_rate: float  # requests/s the fleet is simulated at: target × headroom
    num_requests: int
    start_replicas: int  # where the search started: one-replica sizing
    sizes: tuple[FleetSize, ...]  # one per router, ROUTERS order

    def size_of(self, router: str) -> FleetSize | None:
        return next((z for z in self.sizes if z.router == router), None)

    @property
    def chosen(self) -> FleetSize:
        return self.size_of(self.router)

    def rows(self) -> list[dict]:
        """One row per router: replicas, p95 TTFT and TPOT at that size, hit rate, $/hour, saved vs round robin."""
        base = self.size_of("round-robin")
        out = []
        for z in self.sizes:
            row = z.to_dict()
            both = base is not None and base.replicas is not None and z.replicas is not None
            row["replicas_saved_vs_round_robin"] = base.replicas - z.replicas if both else None
            row["usd_per_hour_saved_vs_round_robin"] = base.usd_per_hour - z.usd_per_hour if both else None
            out.append(row)
        return out

    def to_dict(self) -> dict:
        chosen = self.chosen
        return dict(
            router=self.router,
            fleet_rate=self.fleet_rate,
            num_requests=self.num_requests,
            start_replicas=self.start_replicas,
            replicas=chosen.replicas,
            usd_per_hour=chosen.usd_per_hour,
            policies=self.rows(),
        )


def routing_plan(
    r: Resolved,
    target_rps: float,
    traffic: TrafficSpec,
    slo: SLO,
    headroom: float,
    router: str,
    start_replicas: int,
    prices: dict[str, float] | None = None,
    routers: tuple[str, ...] = ROUTERS,
    max_replicas: int = MAX_REPLICAS,
    spec=None,
) -> RoutingPlan:
    """Every router's fleet size for `r` (ONE replica's scenario) at target × headroom (module note)."""
    replica = traffic_replica(r, traffic, spec)
    fleet_rate = target_rps * headroom
    num_requests = max(traffic.num_requests, min(traffic.num_requests * start_replicas, MAX_FLEET_REQUESTS))
    wl = workload_at(traffic.model_copy(update={"num_requests": num_requests}), fleet_rate)
    usd = price_of(r, prices)
    dp = r.deployment.data_parallel_size
    most = max(1, min(max_replicas, MAX_REPLICAS // dp))
    session_rate = fleet_rate if traffic.is_sessions else None  # sessions: a run must offer its rate (as capacity)
    sizes = tuple(
        size_under_router(replica, wl, name, slo, usd, start_replicas, most, dp, session_rate) for name in routers
    )
    return RoutingPlan(router, fleet_rate, num_requests, start_replicas, sizes)


# --- the ranking under a router ----------------------------------------------------------------------------
ROUTED_TOP = 3  # ranked deployments sized under the router: each is a fleet search (CPU bounded)
ROUTED_KEYS = ("router", "fleet_replicas", "fleet_usd_per_hour", "fleet_ttft_p95_s", "fleet_tpot_p95_s")


def row_scenario(s: Scenario, row: dict) -> Scenario | None:
    """The single-replica scenario of an aggregated ranking row (None: a disaggregated row, or one that no longer
    starts)."""
    if row.get("disaggregated") or row.get("searched") is False or not row.get("feasible"):
        return None
    found = candidates(s, [row["gpu"]], [row["weights"]], (row["tp"],))
    return found[0] if found else None


def routed_rows(
    s: Scenario,
    rows: list[dict],
    target_rps: float,
    traffic: TrafficSpec,
    slo: SLO,
    headroom: float,
    router: str,
    prices: dict[str, float] | None = None,
    top: int = ROUTED_TOP,
) -> list[dict]:
    """The ranking with the first `top` feasible aggregated rows sized as a fleet under `router` (routing_plan, that
    router only, searched from the row's replicas); the other rows get the same keys as None (module note)."""
    out, left = [], top
    for row in rows:
        cand = row_scenario(s, row) if left > 0 else None
        added = dict.fromkeys(ROUTED_KEYS)
        added["fleet_prefix_hit_rate"] = None
        if cand is not None:
            left -= 1
            r = resolve(replica_scenario(cand))
            plan = routing_plan(r, target_rps, traffic, slo, headroom, router, row["replicas"], prices, (router,))
            z = plan.chosen
            added.update(router=router, fleet_replicas=z.replicas, fleet_usd_per_hour=z.usd_per_hour)
            if z.at_size is not None:
                added.update(
                    fleet_ttft_p95_s=z.at_size.ttft_s.p95,
                    fleet_tpot_p95_s=z.at_size.tpot_s.p95,
                    fleet_prefix_hit_rate=z.at_size.prefix_hit_rate,
                )
        out.append({**row, **added})
    return out
