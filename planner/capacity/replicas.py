"""Capacity per replica at an SLO, replicas for a target rate, and what they cost (primer §9).

"Sustains": a replica sustains an arrival rate λ when a seeded simulation of open-loop requests at λ (the traffic's
`num_requests`, or enough to fill the running batch and turn it over four times: probe_workload.probe_size)
passes the steady-state verdict (planner/capacity/steady_state.py: warm-up and drain discarded; the waiting queue
does not grow by more than 5% of λ per second; p95 TTFT, p95 TPOT and p99 end-to-end within the SLO). The
capacity `max_rate_per_replica` is the highest sustained rate, found by search:

1. bracket from the analytic estimate (planner.capacity.load_sweep.estimate_capacity_rps): probe it, then step up
   ×1.5 (or down ÷2) until the outcome flips;
2. bisect geometrically until hi ≤ lo × (1 + rel_tol) (rel_tol 2% by default) and report lo (a sustained rate).

Every probe reuses the same requests (same lengths, same unit-rate arrival gaps divided by λ, same simulator seed:
common random numbers), so the search is deterministic and the probes differ only in their rate. None of the
probes sustaining at estimate/512 means the SLO cannot be met at any load (capacity 0, e.g. a TTFT target below
the prefill time of the long prompts).

Cost: replicas = ceil(target × headroom / max_rate_per_replica); GPUs = replicas × GPUs per replica (TP);
$/hour = GPUs × $ per GPU-hour; $ per million output tokens = $/hour / (TARGET rate × mean output tokens ×
3600) × 1e6, i.e. what the traffic you actually serve costs (idle headroom included). The figure at full
utilisation (rate = capacity) is reported as `usd_per_million_output_tokens_at_capacity`.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

from planner.capacity.load_sweep import estimate_capacity_rps
from planner.capacity.probe_workload import mean_tokens, probe_size, repeated_prompt_share, workload_at
from planner.capacity.steady_state import (
    SATURATION_RATE_PER_S,
    Verdict,
    judge,
    offered_rps,
    saturated_throughput_rps,
    short_of_rate,
    within_scaled_slo,
)
from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.core.workload import SLO, TrafficSpec
from planner.sim.offload_plan import KVOffload
from planner.sim.serving import Replica, run_serving
from planner.sim.settings import ServerSettings, SpecDecoding

DEFAULT_REL_TOL = 0.02  # the search stops when hi <= lo × 1.02
UP_FACTOR, DOWN_FACTOR, MAX_BRACKET_STEPS = 1.5, 2.0, 9


# One probe = one steady-state verdict (planner/capacity/steady_state.py), shared with the load-test knee.
Probe = Verdict


def traffic_replica(
    r: Resolved, traffic: TrafficSpec, spec: SpecDecoding | None = None, offload: KVOffload | None = None
) -> Replica:
    """One replica of the scenario as the capacity probes run it: its own settings, with the traffic's prefix
    caching (when the profile asks for it; else the deployment's), the traffic's seed for the simulator,
    speculative decoding when `spec` is given and the KV offload tiers, if any (planner/sim/offload_plan.py)."""
    settings = ServerSettings.of(
        r, prefix_caching=traffic.prefix_caching or None, seed=traffic.seed, spec=spec, offload=offload
    )
    return Replica(r, settings)


def saturated_rps(replica: Replica, traffic: TrafficSpec) -> float | None:
    """The replica's saturated throughput on these requests (planner.capacity.steady_state), as many as a probe
    runs (probe_workload.probe_size)."""
    traffic, _ = probe_size(replica, traffic)
    return saturated_throughput_rps(run_serving(replica, workload_at(traffic, SATURATION_RATE_PER_S)))


def probe(replica: Replica, traffic: TrafficSpec, slo: SLO, rate_per_s: float, saturated: float | None = None) -> Probe:
    """Simulate one replica at `rate_per_s` and judge its steady state against the SLO (sessions: and fail a run
    that does not offer the rate, steady_state.short_of_rate); as many requests as probe_size says."""
    traffic, _ = probe_size(replica, traffic)
    res = run_serving(replica, workload_at(traffic, rate_per_s))
    v = judge(res, slo, rate_per_s, saturated)
    return short_of_rate(v, offered_rps(res), rate_per_s) if traffic.is_sessions else v


@dataclass(frozen=True)
class CapacityResult:
    max_rate_per_replica: float  # requests/s; 0 when the SLO is out of reach
    estimate_rps: float  # the analytic starting point
    rel_tol: float
    at_capacity: Probe | None  # the probe at max_rate_per_replica
    probes: tuple[Probe, ...]  # in the order they ran
    mean_prompt_tokens: float
    mean_output_tokens: float
    num_requests: int  # simulated per probe (probe_workload.probe_size; sessions: sessions)
    seed: int
    wall_s: float
    slo: SLO = field(default_factory=SLO)
    saturated_rps: float | None = None  # completions/s with every request arriving at once (stability bound)
    probe_sizing: str = ""  # why the probes ran num_requests

    @property
    def feasible(self) -> bool:
        return self.max_rate_per_replica > 0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["slo"] = self.slo.model_dump()
        out["feasible"] = self.feasible
        return out


def bracket_and_bisect(sustains, start: float, rel_tol: float = DEFAULT_REL_TOL) -> float:
    """Highest rate with sustains(rate) True, to within rel_tol, searching from `start` (module note).
    Assumes sustains is monotone (True below the capacity, False above); 0.0 if nothing down to start/512."""
    if not (rel_tol >= 1e-4 and start > 0):  # below ~1e-16, 1 + rel_tol == 1 and the bisection never ends
        raise InputError("rel_tol", "the tolerance must be at least 1e-4 and the starting rate > 0")
    lo = hi = None
    if sustains(start):
        lo = start
        for _ in range(MAX_BRACKET_STEPS):
            if not sustains(lo * UP_FACTOR):
                hi = lo * UP_FACTOR
                break
            lo *= UP_FACTOR
        if hi is None:
            return lo  # still sustaining far above the estimate: report the highest probed rate
    else:
        hi = start
        for _ in range(MAX_BRACKET_STEPS):
            if sustains(hi / DOWN_FACTOR):
                lo = hi / DOWN_FACTOR
                break
            hi /= DOWN_FACTOR
        if lo is None:
            return 0.0
    while hi > lo * (1.0 + rel_tol):
        mid = math.sqrt(lo * hi)  # geometric midpoint: the tolerance is relative
        if sustains(mid):
            lo = mid
        else:
            hi = mid
    return lo


def find_capacity(
    replica: Replica,
    traffic: TrafficSpec = TrafficSpec(),
    slo: SLO = SLO(),
    rel_tol: float = DEFAULT_REL_TOL,
    saturated: float | None | tuple = (),
) -> CapacityResult:
    """The highest arrival rate one replica sustains under `slo` (module note): a pure function of its inputs.
    Every probe runs the same replica (traffic_replica: its memory plan and step-cost model are derived once).
    `saturated`: saturated_rps(replica, traffic) when the caller has it already (the ranking's bound); the same
    number the search would compute, so the answer does not change."""
    t0 = time.perf_counter()
    traffic, sizing = probe_size(replica, traffic)
    mean_in, mean_out = mean_tokens(traffic)
    estimate = estimate_capacity_rps(replica, mean_in, mean_out, repeated_prompt_share(traffic))
    if isinstance(saturated, tuple):  # not given
        saturated = saturated_rps(replica, traffic)
    probes: dict[float, Probe] = {}

    def sustains(rate: float) -> bool:
        probes[rate] = probe(replica, traffic, slo, rate, saturated)
        return probes[rate].sustains

    best = bracket_and_bisect(sustains, estimate, rel_tol)
    return CapacityResult(
        best,
        estimate,
        rel_tol,
        probes.get(best),
        tuple(probes.values()),
        mean_in,
        mean_out,
        traffic.num_requests,
        traffic.seed,
        time.perf_counter() - t0,
        slo,
        saturated,
        sizing,
    )


def latency_bound_rate(
    replica: Replica,
    traffic: TrafficSpec,
    slo: SLO,
    ratios: tuple[float, float, float],
    cap: CapacityResult,
    rel_tol: float = DEFAULT_REL_TOL,
) -> float:
    """The highest rate one replica sustains if its p95 TTFT, p95 TPOT and p99 end-to-end land at `ratios` × the
    simulated ones (the high ends of their error bands): the same search at the SLO divided by the ratios,
    started at the capacity and reusing the capacity search's probes (a rate already run is not run again)."""
    if cap.max_rate_per_replica <= 0:
        return 0.0
    if all(x <= 1.0 for x in ratios):
        return cap.max_rate_per_replica
    seen = {p.rate_per_s: p for p in cap.probes}

    def sustains(rate: float) -> bool:
        v = seen.get(rate) or probe(replica, traffic, slo, rate, cap.saturated_rps)
        return within_scaled_slo(v, slo, *ratios)

    return bracket_and_bisect(sustains, cap.max_rate_per_replica, rel_tol)
