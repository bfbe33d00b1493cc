"""Rate matching of a prefill and a decode pool: instances of each for a target rate, and the goodput per GPU."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.capacity.cost import replicas_for


def pool_ratio(prefill_rate: float, decode_rate: float) -> float:
    """Prefill instances per decode instance when both pools run full: decode rate / prefill rate."""
    if prefill_rate <= 0 or decode_rate <= 0:
        return math.nan
    return decode_rate / prefill_rate


@dataclass(frozen=True)
class RateMatch:
    prefill_instances: int | None
    decode_instances: int | None
    gpus: int | None  # None when a pool cannot serve the target
    rps_per_gpu: float


def rate_matched(
    target_rps: float,
    prefill_rate: float,
    decode_rate: float,
    gpus_per_prefill: int = 1,
    gpus_per_decode: int = 1,
    headroom: float = 1.0,
) -> RateMatch:
    """Instances of each pool for a target and the goodput per GPU: x = ceil(target × headroom / P), likewise y;
    goodput per GPU = target / (x × GPUs per prefill + y × GPUs per decode)."""
    x = replicas_for(target_rps, prefill_rate, headroom)
    y = replicas_for(target_rps, decode_rate, headroom)
    if not x or not y:
        return RateMatch(x, y, None, 0.0)
    gpus = x * gpus_per_prefill + y * gpus_per_decode
    return RateMatch(x, y, gpus, target_rps / gpus)
