"""The app's traffic profiles as workloads: a window of a recorded trace at a chosen rate, or custom distributions.

A profile (planner.core.workload.PROFILES) is a bundled trace (chat, code, RAG/long context), `custom`
(length distributions and an arrival process) or `upload` (the user's own trace).
"""

from __future__ import annotations

import math

import numpy as np

from planner.core.errors import InputError
from planner.core.workload import PROFILES
from planner.traffic.generators import interarrival_s, open_loop, pooled_prompts
from planner.traffic.sessions import PREFIX_BLOCK_TOKENS
from planner.traffic.traces import load_trace
from planner.traffic.workload import Workload

TIMINGS = ("poisson", "trace")  # trace profiles: Poisson arrivals, or the trace's own timing rescaled


def trace_window(
    trace: Workload, num_requests: int, rate_per_s: float, seed: int = 0, timing: str = "poisson"
) -> Workload:
    """`num_requests` consecutive requests of a trace (from a seeded start, prefix ids kept), arriving at
    `rate_per_s`: Poisson, or the window's own timing compressed/stretched to that mean rate."""
    if timing not in TIMINGS:
        raise InputError("timing", f"use one of {', '.join(TIMINGS)}")
    if not (math.isfinite(rate_per_s) and rate_per_s > 0):
        raise InputError("rate_per_s", f"must be a number > 0, got {rate_per_s!r}")
    n = min(int(num_requests), trace.num_requests)
    rng = np.random.default_rng(seed)
    start = int(rng.integers(0, trace.num_requests - n + 1))
    win = trace.take(np.arange(start, start + n), seed=seed)
    if timing == "poisson" or n < 2 or win.arrival_s[-1] <= win.arrival_s[0]:
        arrival_s = np.cumsum(interarrival_s(n, rate_per_s, "poisson", 1.0, rng))
        how = f"Poisson at {rate_per_s:g} req/s"
    else:
        rel = win.arrival_s - win.arrival_s[0]
        arrival_s = rel * ((n - 1) / rel[-1]) / rate_per_s  # mean gap becomes 1 / rate
        how = f"trace timing rescaled to {rate_per_s:g} req/s"
    return Workload(
        arrival_s,
        win.prompt_tokens,
        win.output_tokens,
        win.prefix_ids,
        win.prefix_block_tokens,
        seed=seed,
        source=f"{trace.source}: requests {start:,}–{start + n - 1:,}, {how}",
    )


def profile_workload(
    profile: str,
    num_requests: int,
    rate_per_s: float,
    seed: int = 0,
    *,
    prompt: str = "lognormal:mean=1000,sigma=0.8",
    output: str = "lognormal:mean=200,sigma=0.8",
    arrival: str = "poisson",
    cv: float = 1.0,
    trace: Workload | None = None,
    prompt_pool: int = 0,
) -> Workload:
    """Open-loop traffic of a profile at `rate_per_s` (`arrival` is poisson|gamma|constant for custom, or
    poisson|trace for trace profiles; `trace` is the loaded upload for the upload profile); `prompt_pool` > 0: the
    custom profile's prompts drawn from that many distinct prompts (pooled_prompts, prefix ids in blocks of
    PREFIX_BLOCK_TOKENS, as sessions mark theirs)."""
    if profile not in PROFILES:
        raise InputError("profile", f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
    if profile == "custom":
        wl = open_loop(num_requests, rate_per_s, prompt, output, arrival, cv, seed)
        return pooled_prompts(wl, prompt_pool, PREFIX_BLOCK_TOKENS, seed) if prompt_pool else wl
    if prompt_pool:
        raise InputError("prompt_pool", "applies to the custom profile's generated prompts (a trace carries its own)")
    if profile == "upload" and trace is None:
        raise InputError("trace", "upload a trace file first")
    wl = trace if profile == "upload" else load_trace(PROFILES[profile].trace)
    return trace_window(wl, num_requests, rate_per_s, seed, arrival if arrival in TIMINGS else "poisson")


def mean_lengths(wl: Workload) -> tuple[float, float]:
    return float(wl.prompt_tokens.mean()), float(wl.output_tokens.mean())
