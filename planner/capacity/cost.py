"""Replicas for a target rate and what they cost: ceil(target × headroom / capacity per replica), $/hour and $ per
million tokens (planner.capacity.replicas module note, "Cost"); one replica's scenario; the price of a GPU-hour."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.capacity.replicas import CapacityResult
from planner.core.errors import InputError
from planner.core.scenario import Resolved, Scenario

DEFAULT_HEADROOM = 1.2  # provision 20% above the target rate (bursts, a replica down)
SECONDS_PER_HOUR = 3600.0


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
