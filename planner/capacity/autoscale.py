"""A day of traffic under an autoscaler that scales on queue depth, tokens in flight or TTFT (primer §9).

A fluid, discrete-time model (1-minute ticks): it is fast (a day is 1,440 ticks) and rests on the simulator only
through one replica's measured figures (`ReplicaModel`, from the capacity search). Per tick of dt seconds:

    arrivals      A = λ(t) × dt                           (λ: a diurnal curve, or a trace's rate profile scaled)
    capacity      C = ready × μ × dt                      (μ = max_rate_per_replica at the SLO)
    served        S = min(backlog + A, C);  backlog' = backlog + A − S   (the queue beyond capacity)
    utilisation   ρ = S / C
    p95 TTFT      ≈ ttft(ρ) + backlog' / (ready × μ)      ttft(ρ): linear between the simulator's p95 TTFT at
                    light load (ρ_light) and at capacity (ρ = 1); the second term drains the backlog
    in flight     requests = backlog' + (S / dt) × mean e2e (Little's law), tokens = requests × mean tokens

Approximations: within a tick traffic is smooth (no burst inside a minute), the p95 of a tick is its fluid
estimate (not a percentile over requests), every ready replica works at the same utilisation, and a replica
serves up to μ whatever its queue. A tick violates the SLO when its p95 TTFT exceeds the target; the report gives
the share of requests that arrived in violating ticks.

Policy (target tracking, like Kubernetes' HPA): per ready replica the metric m is compared with its target; the
desired count is ceil(ready × m / target) (no change within ±10%; at most double or +4 per decision, HPA's
default), clipped to [min_replicas, max_replicas]. TTFT is a late signal (flat until the queue builds), so its
target is a fraction of the p95 TTFT at capacity, not of the SLO. A
scale-up starts the missing replicas at once; each is ready after node start + model bytes / network bandwidth +
model bytes / host-to-GPU bandwidth. A scale-down happens only when no scaling happened in the last cooldown_s
(scale up early, down slowly). Replica-hours count starting replicas too (they are billed while they boot).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, PositiveInt

from planner.core.errors import InputError

METRICS = {
    "queue": "queue depth (requests waiting + running per replica)",
    "tokens": "tokens in flight per replica",
    "ttft": "p95 TTFT (s)",
}
TICK_S = 60.0
MINUTES_PER_DAY = 1440
MAX_STEP_UP = 4  # HPA default scale-up policy: +100% or +4 pods, whichever is more
HPA_TOLERANCE = 0.1  # Kubernetes HPA default: no change while |m / target − 1| <= 10%


class Policy(BaseModel):
    """Autoscaler settings; targets are per replica (queue, tokens) or the fleet's p95 (ttft)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str = Field("queue", pattern="^(queue|tokens|ttft)$")
    target: PositiveFloat = 0.7  # × the metric's value on a replica at capacity (in flight, tokens, p95 TTFT)
    min_replicas: PositiveInt = 1  # the warm minimum
    max_replicas: PositiveInt = 1000
    node_start_s: NonNegativeFloat = 120.0  # provision a node, pull the container image
    network_gb_per_s: PositiveFloat = 1.0  # weight download, decimal GB/s (~10 Gbit/s effective)
    load_gb_per_s: PositiveFloat = 10.0  # host to GPU, decimal GB/s (PCIe-ish, after safetensors mmap)
    cooldown_s: NonNegativeFloat = 600.0


@dataclass(frozen=True)
class ReplicaModel:
    """One replica as the capacity search measured it."""

    max_rate_per_replica: float  # μ, requests/s at the SLO
    ttft_light_s: float  # p95 TTFT at light load
    ttft_capacity_s: float  # p95 TTFT at μ
    e2e_mean_s: float  # mean end-to-end at μ (Little's law: requests running)
    tokens_per_request: float  # mean prompt + output tokens
    model_bytes: float  # weights to download and load
    gpus_per_replica: int = 1
    light_utilisation: float = 0.25  # ρ of the light-load measurement


def scale_up_delay_s(model_bytes: float, p: Policy) -> float:
    """node start + bytes / network bandwidth + bytes / host-to-GPU bandwidth (seconds)."""
    return p.node_start_s + model_bytes / (p.network_gb_per_s * 1e9) + model_bytes / (p.load_gb_per_s * 1e9)


def diurnal_rates(
    mean_rps: float, amplitude: float = 0.6, peak_hour: float = 14.0, minutes: int = MINUTES_PER_DAY
) -> np.ndarray:
    """λ per minute: mean × (1 + amplitude × cos(2π (hour − peak_hour) / 24)), a day with one peak."""
    if not (mean_rps > 0 and math.isfinite(mean_rps)):
        raise InputError("mean_rps", "must be > 0")
    if not 0 <= amplitude < 1:
        raise InputError("amplitude", "must be in [0, 1): the trough is mean × (1 − amplitude)")
    hours = np.arange(minutes) / 60.0
    return mean_rps * (1.0 + amplitude * np.cos(2 * np.pi * (hours - peak_hour) / 24.0))


def trace_rates(arrival_s: np.ndarray, mean_rps: float, minutes: int = MINUTES_PER_DAY) -> np.ndarray:
    """A trace's arrival-rate shape stretched over `minutes` bins and scaled to a mean of `mean_rps`."""
    arr = np.asarray(arrival_s, dtype=float)
    arr = arr[~np.isnan(arr)]
    if len(arr) < 2 or arr[-1] <= arr[0]:
        raise InputError("trace", "needs at least two distinct arrival times")
    counts, _ = np.histogram(arr, bins=minutes, range=(arr.min(), arr.max()))
    return mean_rps * counts / counts.mean()


def _ttft(m: ReplicaModel, rho: float, backlog: float, ready: int) -> float:
    if ready == 0:
        return math.inf if backlog > 0 else m.ttft_light_s
    span = max(1.0 - m.light_utilisation, 1e-9)
    frac = min(max((rho - m.light_utilisation) / span, 0.0), 1.0)
    return m.ttft_light_s + (m.ttft_capacity_s - m.ttft_light_s) * frac + backlog / (ready * m.max_rate_per_replica)


def _per_replica_metric(
    p: Policy, m: ReplicaModel, in_flight: float, ttft: float, ready: int, slo_ttft_s: float
) -> tuple[float, float]:
    """(metric value, its target): per-replica in-flight requests or tokens, or the p95 TTFT, against
    target × its value on a replica running at capacity."""
    at_cap = m.max_rate_per_replica * m.e2e_mean_s  # requests in flight on a replica at capacity
    if p.metric == "ttft":
        return ttft, p.target * m.ttft_capacity_s
    value = in_flight / max(ready, 1)
    if p.metric == "tokens":
        return value * m.tokens_per_request, p.target * at_cap * m.tokens_per_request
    return value, p.target * at_cap


def desired_replicas(ready: int, value: float, target: float, p: Policy) -> int:
    """HPA: ceil(ready × value / target), unchanged within the tolerance, at most max(2 × ready, ready + 4)
    (HPA's default scale-up limit), clipped to [min, max]."""
    ratio = value / target if target > 0 else math.inf
    want = ready if abs(ratio - 1.0) <= HPA_TOLERANCE else math.ceil(max(ready, 1) * min(ratio, 1e6) - 1e-9)
    want = min(want, max(2 * ready, ready + MAX_STEP_UP))
    return int(min(max(want, p.min_replicas), p.max_replicas))


def simulate_day(
    rates: np.ndarray,
    m: ReplicaModel,
    p: Policy,
    slo_ttft_s: float,
    usd_per_gpu_hour: float = 0.0,
    tick_s: float = TICK_S,
    headroom: float = 1.0,
) -> DayReport:
    """Run the policy over `rates` (requests/s per tick); per-tick series and the day's totals."""
    rates = np.asarray(rates, dtype=float)
    delay = scale_up_delay_s(m.model_bytes, p)
    mu = m.max_rate_per_replica
    ready = max(p.min_replicas, min(p.max_replicas, math.ceil(rates[0] / mu - 1e-9)))
    starting: list[float] = []  # ready-at times
    backlog, last_scale = 0.0, -math.inf
    cols = {
        k: np.zeros(len(rates))
        for k in ("replicas", "starting", "served", "backlog", "ttft_p95_s", "utilisation", "metric")
    }
    events = []
    for k, lam in enumerate(rates):
        now = k * tick_s
        ready += sum(1 for t in starting if t <= now)
        starting = [t for t in starting if t > now]
        arrivals, cap = lam * tick_s, ready * mu * tick_s
        served = min(backlog + arrivals, cap)
        backlog = backlog + arrivals - served
        rho = served / cap if cap > 0 else 1.0
        ttft = _ttft(m, rho, backlog, ready)
        in_flight = backlog + served / tick_s * m.e2e_mean_s
        value, target = _per_replica_metric(p, m, in_flight, ttft, ready, slo_ttft_s)
        want = desired_replicas(ready, value, target, p)
        if want > ready + len(starting):
            starting += [now + delay] * (want - ready - len(starting))
            last_scale = now
            events.append((now, "up", want))
        elif want < ready and not starting and now - last_scale >= p.cooldown_s:
            ready, last_scale = want, now
            events.append((now, "down", want))
        for name, v in (
            ("replicas", ready),
            ("starting", len(starting)),
            ("served", served),
            ("backlog", backlog),
            ("ttft_p95_s", ttft),
            ("utilisation", rho),
            ("metric", value),
        ):
            cols[name][k] = v
    return _report(rates, cols, events, m, p, slo_ttft_s, usd_per_gpu_hour, tick_s, headroom, delay)


def static_peak_replicas(rates: np.ndarray, mu: float, headroom: float = 1.0) -> int:
    """Provisioning for the peak all day: ceil(peak λ × headroom / μ)."""
    return max(1, math.ceil(float(np.max(rates)) * headroom / mu - 1e-9))


@dataclass(frozen=True)
class DayReport:
    """A day under the autoscaler against static peak provisioning (simulate_day)."""

    series: dict[str, np.ndarray]  # per tick: minute, rate_per_s and the simulated columns (a table for the chart)
    events: list  # (time s, "up" | "down", replicas after)
    scale_up_delay_s: float
    policy: dict
    violating_ticks: int  # ticks whose estimated p95 TTFT is above the SLO
    violating_request_share: float  # share of the day's requests that arrived in them
    replica_hours: float  # running + starting replicas, billed
    usd: float
    static_replicas: int  # max(ceil(peak × headroom / capacity), the autoscaler's peak ready replicas), all day
    static_replica_hours: float
    static_usd: float
    savings: float  # 1 − replica-hours / static replica-hours
    peak_replicas: int
    min_replicas_seen: int
    requests: float


def _report(rates, cols, events, m: ReplicaModel, p: Policy, slo_ttft_s, usd, tick_s, headroom, delay) -> DayReport:
    hours = len(rates) * tick_s / 3600.0
    arrivals = rates * tick_s
    violating = cols["ttft_p95_s"] > slo_ttft_s
    replica_hours = float(np.sum(cols["replicas"] + cols["starting"]) * tick_s / 3600.0)
    # the static fleet provisions at least what the autoscaler itself ran at its busiest minute: its target (a
    # fraction of the at-capacity metric) can hold more spare than `headroom`, and a static fleet smaller than
    # the autoscaled peak would make the saving look larger than it is
    static = max(static_peak_replicas(rates, m.max_rate_per_replica, headroom), int(np.max(cols["replicas"])))
    static_hours = static * hours
    per_gpu_hour = m.gpus_per_replica * usd
    series = {"minute": np.arange(len(rates)) * tick_s / 60.0, "rate_per_s": rates, **cols}
    return DayReport(
        series=series,
        events=events,
        scale_up_delay_s=delay,
        policy=p.model_dump(),
        violating_ticks=int(violating.sum()),
        violating_request_share=float(arrivals[violating].sum() / arrivals.sum()) if arrivals.sum() else 0.0,
        replica_hours=replica_hours,
        usd=replica_hours * per_gpu_hour,
        static_replicas=static,
        static_replica_hours=static_hours,
        static_usd=static_hours * per_gpu_hour,
        savings=1.0 - replica_hours / static_hours if static_hours else 0.0,
        peak_replicas=int(np.max(cols["replicas"] + cols["starting"])),
        min_replicas_seen=int(np.min(cols["replicas"])),
        requests=float(arrivals.sum()),
    )


def measure_replica(s, traffic, slo, plan) -> ReplicaModel:
    """A ReplicaModel from a CapacityPlan (planner.capacity.capacity_plan.capacity_plan) plus one light-load
    simulation."""
    from planner.capacity.cost import replica_scenario
    from planner.capacity.replicas import probe, traffic_replica
    from planner.core.scenario import resolve
    from planner.memory.plan import plan_memory

    r = resolve(replica_scenario(s))
    mu = plan.max_rate_per_replica
    if not mu:
        raise InputError("slo", "one replica cannot meet the SLO at any load: nothing to autoscale")
    light_rho = 0.25
    light = probe(traffic_replica(r, traffic), traffic, slo, light_rho * mu)
    at_cap = plan.at_capacity
    return ReplicaModel(
        max_rate_per_replica=mu,
        ttft_light_s=light.ttft_p95_s or 0.0,
        ttft_capacity_s=at_cap.ttft_p95_s,
        e2e_mean_s=at_cap.e2e_mean_s,
        tokens_per_request=plan.mean_prompt_tokens + plan.mean_output_tokens,
        model_bytes=plan_memory(r).weight_bytes,
        gpus_per_replica=plan.gpus_per_replica,
        light_utilisation=light_rho,
    )
