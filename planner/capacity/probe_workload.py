"""The requests a capacity probe runs: the traffic's requests at 1 request/s (parsed once per process), the same
requests at any rate (common random numbers: planner.capacity.replicas module note), and their mean lengths.

How many (`probe_size`): a probe judges the steady state over the arrivals between the 20th and 90th percentile
(planner/capacity/steady_state.py). An overloaded replica first absorbs the excess into its running batch: up to
its running cap C = min(max_num_seqs, KV pool / (mean prompt + mean output / 2)) requests are admitted before
any has to wait. A probe shorter than that never shows a queue, whatever the rate (1,000 requests at 115 req/s
into a batch of 2,048 sequences: nothing ever waits). So every probe runs at least PROBE_RUNNING_CAPS × C
requests: C arrivals fill the batch before the window opens (0.2 × 6C > C) and the window holds 0.7 × 6C = 4.2C
arrivals, four turnovers of a full batch; a stable replica's in-system level λ·E[T] ≤ C settles within E[T] ≤
C/λ < 0.2 × 6C/λ seconds, before the window opens too. The user's request count is kept when larger; the
probe is capped at MAX_PROBE_REQUESTS (say so: the reason names it). A trace upload replays its own requests.
"""

from __future__ import annotations

import math
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


PROBE_RUNNING_CAPS = 6  # probe requests per request the running batch holds (module note)
MAX_PROBE_REQUESTS = 200_000  # ~1 GB of per-request and per-step records at most
SIZING_SAMPLE = 1000  # C is sized on the mean lengths of this many of the traffic's requests, whatever the count


def running_cap(replica, traffic: TrafficSpec) -> int:
    """C: requests the replica's running batch holds on this traffic (module note), at least 1; from the lengths of
    SIZING_SAMPLE requests, so that a probe's own size does not change it (probe_size of a sized spec is itself)."""
    cfg = replica.scheduler_config
    prompt, output = mean_tokens(traffic.model_copy(update={"num_requests": SIZING_SAMPLE}))
    per_request = max(prompt + output / 2, 1.0)
    return max(1, min(int(cfg.running_cap), int(cfg.kv_pool_tokens // per_request)))


def probe_size(replica, traffic: TrafficSpec) -> tuple[TrafficSpec, str]:
    """The traffic a capacity probe of `replica` runs (module note): the same spec with enough requests (sessions:
    sessions × turns) to fill the running batch and turn it over four times, and why that many."""
    if traffic.profile == "upload":
        return traffic, "the uploaded trace's own requests"
    cap = running_cap(replica, traffic)
    per_unit = (traffic.turns or 1) if traffic.is_sessions else 1
    need = min(PROBE_RUNNING_CAPS * cap, MAX_PROBE_REQUESTS)
    units = max(traffic.num_requests, math.ceil(need / per_unit))
    asked = traffic.num_requests * per_unit
    what = f"{PROBE_RUNNING_CAPS} × the running batch of {cap:,} requests"
    if units == traffic.num_requests:
        why = f"the {asked:,} requests asked for (at least {what})"
    else:
        why = f"{units * per_unit:,} requests, not the {asked:,} asked for: {what}, so an overload shows as a queue"
        if need == MAX_PROBE_REQUESTS:
            why += f" (capped at {MAX_PROBE_REQUESTS:,})"
    return (traffic if units == traffic.num_requests else traffic.model_copy(update={"num_requests": units})), why


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
