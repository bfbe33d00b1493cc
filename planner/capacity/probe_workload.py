"""The requests a capacity probe runs: the traffic's requests at 1 request/s (parsed once per process), the same
requests at any rate (common random numbers: planner.capacity.replicas module note), and their mean lengths."""

from __future__ import annotations

import threading
from dataclasses import replace
from functools import lru_cache

from planner.core.workload import TrafficSpec
from planner.traffic.profiles import profile_workload
from planner.traffic.sessions import sessions
from planner.traffic.traces import load_trace
from planner.traffic.workload import Workload

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
        prompt_pool=traffic.prompt_pool,
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


def repeated_prompt_share(traffic: TrafficSpec) -> float:
    """The share of the simulated prompt tokens that repeat an earlier request's prompt (a prompt pool: TrafficSpec.
    prompt_pool; 0 without one): what a prefix cache holding every prompt would serve, to the block."""
    if not traffic.prompt_pool:
        return 0.0
    wl = base_workload(traffic)
    seen: set[int] = set()
    repeated = 0
    for ids in wl.prefix_ids:
        if len(ids) and int(ids[0]) in seen:
            repeated += len(ids) * wl.prefix_block_tokens
        elif len(ids):
            seen.add(int(ids[0]))
    total = float(wl.prompt_tokens.sum())
    return repeated / total if total else 0.0


def mean_request_tokens(traffic: TrafficSpec) -> tuple[int, int]:
    """The one request of the traffic (mean prompt, mean output tokens, rounded, at least 1 each): the length the
    app's single-request pages and the sizing report (app and CLI alike) size the KV per request with."""
    prompt, output = mean_tokens(traffic)
    return max(1, round(prompt)), max(1, round(output))
