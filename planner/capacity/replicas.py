"""Capacity per replica at an SLO, replicas for a target rate, and what they cost (primer §9).

"Sustains": a replica sustains an arrival rate λ when a seeded simulation of `num_requests` open-loop requests at λ
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
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

from planner.capacity.load_sweep import estimate_capacity_rps
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
from planner.core.scenario import Resolved, Scenario, resolve
from planner.core.workload import SLO, TrafficSpec
from planner.sim.offload_plan import KVOffload
from planner.sim.serving import Replica, run_serving
from planner.sim.settings import ServerSettings, SpecDecoding
from planner.traffic.profiles import profile_workload
from planner.traffic.sessions import sessions
from planner.traffic.traces import load_trace
from planner.traffic.workload import Workload

DEFAULT_REL_TOL = 0.02  # the search stops when hi <= lo × 1.02
DEFAULT_HEADROOM = 1.2  # provision 20% above the target rate (bursts, a replica down)
UP_FACTOR, DOWN_FACTOR, MAX_BRACKET_STEPS = 1.5, 2.0, 9
SECONDS_PER_HOUR = 3600.0


_BASE_WORKLOAD_LOCK = threading.Lock()


def base_workload(traffic: TrafficSpec) -> Workload:
    """The spec's requests arriving at 1 request/s (cached: a trace is parsed once per process, even when many
    app sessions ask for it at the same moment)."""
    with _BASE_WORKLOAD_LOCK:
        return _base_workload(traffic)


@lru_cache(maxsize=16)
def _base_workload(traffic: TrafficSpec) -> Workload:
    if traffic.is_sessions:  # sessions start at 1 / turns per second: one request per second on average
        turns = traffic.turns or 1
        return sessions(
            traffic.num_requests,
            turns,
            traffic.system_prompt_tokens,
            traffic.prompt,
            traffic.output,
            traffic.think_time_s,
            rate_per_s=1.0 / turns,
            first_user=traffic.first_input,
            seed=traffic.seed,
        )
    trace = load_trace(traffic.trace_path) if traffic.profile == "upload" else None
    return profile_workload(
        traffic.profile,
        traffic.num_requests,
        1.0,
        traffic.seed,
        prompt=traffic.prompt,
        output=traffic.output,
        arrival=traffic.arrival,
        cv=traffic.cv,
        trace=trace,
    )


def workload_at(traffic: TrafficSpec, rate_per_s: float) -> Workload:
    """The same requests at `rate_per_s`: unit-rate arrival times / rate (every arrival process scales so; for
    sessions only the session starts scale: a think time is the user's, not the rate's)."""
    base = base_workload(traffic)
    if traffic.is_sessions:
        return replace(base, arrival_s=base.arrival_s / rate_per_s, source=f"{base.source}; at {rate_per_s:.4g} req/s")
    return Workload(
        base.arrival_s / rate_per_s,
        base.prompt_tokens,
        base.output_tokens,
        base.prefix_ids,
        base.prefix_block_tokens,
        seed=base.seed,
        source=f"{traffic.profile} at {rate_per_s:.4g} req/s",
    )


def mean_tokens(traffic: TrafficSpec) -> tuple[float, float]:
    """(mean prompt, mean output) tokens of the simulated requests."""
    wl = base_workload(traffic)
    return float(wl.prompt_tokens.mean()), float(wl.output_tokens.mean())


def mean_request_tokens(traffic: TrafficSpec) -> tuple[int, int]:
    """The one request of the traffic (mean prompt, mean output tokens, rounded, at least 1 each): the length the
    app's single-request pages and the sizing report (app and CLI alike) size the KV per request with."""
    prompt, output = mean_tokens(traffic)
    return max(1, round(prompt)), max(1, round(output))


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
    """The replica's saturated throughput on these requests (planner.capacity.steady_state)."""
    return saturated_throughput_rps(run_serving(replica, workload_at(traffic, SATURATION_RATE_PER_S)))


def probe(replica: Replica, traffic: TrafficSpec, slo: SLO, rate_per_s: float, saturated: float | None = None) -> Probe:
    """Simulate one replica at `rate_per_s` and judge its steady state against the SLO (sessions: and fail a run
    that does not offer the rate, steady_state.short_of_rate)."""
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
    num_requests: int
    seed: int
    wall_s: float
    slo: SLO = field(default_factory=SLO)
    saturated_rps: float | None = None  # completions/s with every request arriving at once (stability bound)

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
    mean_in, mean_out = mean_tokens(traffic)
    estimate = estimate_capacity_rps(replica, mean_in, mean_out)
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


# --- replicas and cost ------------------------------------------------------------------------------------
def replicas_for(target_rps: float, max_rate_per_replica: float, headroom: float = DEFAULT_HEADROOM) -> int | None:
    """ceil(target × headroom / capacity per replica); None when one replica sustains nothing."""
    if not (target_rps > 0 and math.isfinite(target_rps)):
        raise InputError("target_rps", f"must be a number > 0, got {target_rps!r}")
    if not (headroom >= 1 and math.isfinite(headroom)):
        raise InputError("headroom", f"must be >= 1 (1.2 = 20% spare), got {headroom!r}")
    if max_rate_per_replica <= 0:
        return None
    return max(1, math.ceil(target_rps * headroom / max_rate_per_replica - 1e-9))


@dataclass(frozen=True)
class Cost:
    replicas: int
    gpus_per_replica: int
    num_gpus: int
    usd_per_gpu_hour: float
    gpu_hours_per_day: float
    usd_per_hour: float
    usd_per_day: float
    usd_per_million_output_tokens: float  # at the target rate
    usd_per_million_tokens: float  # prompt + output tokens, at the target rate


def cost_for(
    target_rps: float,
    replicas: int,
    gpus_per_replica: int,
    usd_per_gpu_hour: float,
    mean_prompt_tokens: float,
    mean_output_tokens: float,
) -> Cost:
    """$/hour = replicas × GPUs per replica × $/GPU-hour; $ per million tokens = $/hour / tokens per hour × 1e6."""
    num_gpus = replicas * gpus_per_replica
    usd_per_hour = num_gpus * usd_per_gpu_hour
    out_per_hour = target_rps * mean_output_tokens * SECONDS_PER_HOUR  # output tokens served per hour
    all_per_hour = target_rps * (mean_prompt_tokens + mean_output_tokens) * SECONDS_PER_HOUR
    return Cost(
        replicas,
        gpus_per_replica,
        num_gpus,
        usd_per_gpu_hour,
        num_gpus * 24.0,
        usd_per_hour,
        usd_per_hour * 24.0,
        usd_per_hour / out_per_hour * 1e6,
        usd_per_hour / all_per_hour * 1e6,
    )


def usd_per_million_output_at_capacity(cap: CapacityResult, gpus_per_replica: int, usd_per_gpu_hour: float):
    """One replica fully used: its $/hour over the output tokens it makes per hour at capacity (× 1e6)."""
    if not cap.feasible:
        return None
    return gpus_per_replica * usd_per_gpu_hour / (cap.max_rate_per_replica * cap.mean_output_tokens * 3600) * 1e6


def replica_scenario(s: Scenario) -> Scenario:
    """The scenario as ONE replica: num_gpus = TP × PP × DP (replicas are counted by the capacity plan instead)."""
    dep = s.deployment
    return s.model_copy(update={"deployment": dep.model_copy(update={"num_gpus": dep.gpus_per_replica})})


def price_of(r: Resolved, prices: dict[str, float] | None = None) -> float:
    """$ per GPU-hour: a user override by GPU id, else data/gpus.yaml's usd_per_hour."""
    prices = prices or {}
    for gid, usd in prices.items():
        if gid.lower() == r.gpu.id.lower():
            return float(usd)
    return float(r.gpu.usd_per_hour)


@dataclass(frozen=True)
class CapacityPlan:
    """Capacity, replicas and cost of one deployment at a target rate (capacity_plan); to_dict is the CLI's
    `capacity --json` contract."""

    model: str
    gpu: str
    tp: int
    weights: str
    engine: str
    target_rate: float
    headroom: float
    max_rate_per_replica: float
    estimate_rps: float
    rel_tol: float
    slo: SLO
    mean_prompt_tokens: float
    mean_output_tokens: float
    num_requests: int
    seed: int
    usd_per_gpu_hour: float
    price_date: str
    price_source: str
    usd_per_million_output_tokens_at_capacity: float | None
    at_capacity: Probe | None
    probes: tuple[Probe, ...]
    search_wall_s: float
    saturated_rps: float | None
    cost: Cost | None  # None when no number of replicas meets the SLO
    operating_point: Probe | None  # one replica at target / replicas (None: infeasible or not asked)

    @property
    def feasible(self) -> bool:
        return self.max_rate_per_replica > 0

    gpus_per_replica: int = 1  # one engine instance: TP × PP × DP GPUs
    data_parallel_size: int = 1  # DP ranks per instance; the search runs one rank at rate / DP
    # capacity per replica with the latencies at their bands' high ends (latency_bound_rate; None: not asked)
    latency_bound_rps: float | None = None

    def to_dict(self) -> dict:
        out = {
            "model": self.model,
            "gpu": self.gpu,
            "tp": self.tp,
            "weights": self.weights,
            "engine": self.engine,
            "target_rate": self.target_rate,
            "headroom": self.headroom,
            "feasible": self.feasible,
            "max_rate_per_replica": self.max_rate_per_replica,
            "estimate_rps": self.estimate_rps,
            "rel_tol": self.rel_tol,
            "slo": self.slo.model_dump(),
            "mean_prompt_tokens": self.mean_prompt_tokens,
            "mean_output_tokens": self.mean_output_tokens,
            "num_requests": self.num_requests,
            "seed": self.seed,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "price_date": self.price_date,
            "price_source": self.price_source,
            "usd_per_million_output_tokens_at_capacity": self.usd_per_million_output_tokens_at_capacity,
            "at_capacity": asdict(self.at_capacity) if self.at_capacity else None,
            "probes": [asdict(p) for p in self.probes],
            "search_wall_s": self.search_wall_s,
            "saturated_rps": self.saturated_rps,
        }
        out.update(asdict(self.cost) if self.cost else dict.fromkeys(Cost.__dataclass_fields__, None))
        out.update(gpus_per_replica=self.gpus_per_replica, usd_per_gpu_hour=self.usd_per_gpu_hour)  # also w/o a cost
        out["operating_point"] = asdict(self.operating_point) if self.operating_point else None
        out["data_parallel_size"] = self.data_parallel_size
        return out


def capacity_plan(
    s: Scenario,
    target_rps: float,
    traffic: TrafficSpec = TrafficSpec(),
    slo: SLO = SLO(),
    headroom: float = DEFAULT_HEADROOM,
    prices: dict[str, float] | None = None,
    rel_tol: float = DEFAULT_REL_TOL,
    operating_point: bool = True,
    saturated: float | None | tuple = (),
    offload: KVOffload | None = None,
    spec: SpecDecoding | None = None,
    latency_ratios: tuple[float, float, float] | None = None,
) -> CapacityPlan:
    """Capacity, replicas and cost of one deployment for `target_rps`, plus the latency at the operating point
    (target / replicas per replica) when `operating_point`; `saturated` as in find_capacity; `spec`: speculative
    decoding on the replica; `latency_ratios`: the high ends of the TTFT, TPOT and e2e bands (measured /
    predicted), for the capacity if the latencies land there (latency_bound_rate)."""
    s = replica_scenario(s)
    r = resolve(s)
    replicas_for(target_rps, 1.0, headroom)  # validates the target and headroom before simulating
    replica = traffic_replica(r, traffic, spec, offload)
    cap = find_capacity(replica, traffic, slo, rel_tol, saturated)  # one DP rank: each runs its own requests
    bound = None if latency_ratios is None else latency_bound_rate(replica, traffic, slo, latency_ratios, cap, rel_tol)
    tp, dp, gpus = r.deployment.tensor_parallel_size, r.deployment.data_parallel_size, r.deployment.gpus_per_replica
    rank_saturated = cap.saturated_rps
    if dp > 1:  # an instance of DP ranks serves DP × one rank's rate on TP × PP × DP GPUs
        cap = replace(
            cap,
            max_rate_per_replica=cap.max_rate_per_replica * dp,
            estimate_rps=cap.estimate_rps * dp,
            saturated_rps=cap.saturated_rps * dp if cap.saturated_rps else cap.saturated_rps,
        )
    usd = price_of(r, prices)
    n = replicas_for(target_rps, cap.max_rate_per_replica, headroom)
    cost = cost_for(target_rps, n, gpus, usd, cap.mean_prompt_tokens, cap.mean_output_tokens) if n else None
    rank_rate = target_rps / n / dp if n else 0.0
    op = probe(replica, traffic, slo, rank_rate, rank_saturated) if n and operating_point else None
    return CapacityPlan(
        model=r.model.name,
        gpu=r.gpu.id,
        tp=tp,
        weights=r.weights.id,
        engine=r.engine.id,
        target_rate=target_rps,
        headroom=headroom,
        max_rate_per_replica=cap.max_rate_per_replica,
        estimate_rps=cap.estimate_rps,
        rel_tol=rel_tol,
        slo=slo,
        mean_prompt_tokens=cap.mean_prompt_tokens,
        mean_output_tokens=cap.mean_output_tokens,
        num_requests=traffic.num_requests,
        seed=traffic.seed,
        usd_per_gpu_hour=usd,
        price_date=r.gpu.price_date,
        price_source=r.gpu.source.get("price", ""),
        usd_per_million_output_tokens_at_capacity=usd_per_million_output_at_capacity(cap, gpus, usd),
        at_capacity=cap.at_capacity,
        probes=cap.probes,
        search_wall_s=cap.wall_s,
        saturated_rps=cap.saturated_rps,
        cost=cost,
        operating_point=op,
        gpus_per_replica=gpus,
        data_parallel_size=dp,
        latency_bound_rps=None if bound is None else bound * dp,
    )
