"""The primer's worked examples as numbered steps: formula, the numbers substituted, the result with its unit.

Each walkthrough is a pure function of its inputs (planner.teaching.inputs, defaults = the primer) and takes
every number from the planner's own functions (planner.memory.sizes, planner.latency.metrics's given-rates mode,
planner.batching.step_model), so a walkthrough can never disagree with the pages. `value` is in the unit printed
(GB, ms, %), rounded only for display.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from planner.teaching.batching_walkthrough import six_requests
from planner.teaching.disagg_walkthrough import DisaggInputs, disaggregation
from planner.teaching.inputs import (
    KVCacheInputs,
    LatencyInputs,
    SixRequestsInputs,
    ThroughputInputs,
    TokenPositionsInputs,
    WeightsInputs,
)
from planner.teaching.latency_walkthroughs import latency, throughput
from planner.teaching.memory_walkthroughs import kv_cache, token_positions, weights
from planner.teaching.steps import Step


@dataclass(frozen=True)
class Walkthrough:
    title: str
    section: str
    inputs: type[BaseModel]
    run: Callable[[BaseModel], list[Step]]


WALKTHROUGHS: dict[str, Walkthrough] = {
    "kv-cache": Walkthrough("KV cache for a 7B model", "§3", KVCacheInputs, kv_cache),
    "weights": Walkthrough("Weight memory and quantization", "§4", WeightsInputs, weights),
    "token-positions": Walkthrough(
        "Token positions with and without the cache", "§3", TokenPositionsInputs, token_positions
    ),
    "latency": Walkthrough("Latency of one request", "§5", LatencyInputs, latency),
    "throughput": Walkthrough("Latency against throughput", "§5", ThroughputInputs, throughput),
    "six-requests": Walkthrough("Six requests on three slots", "§6", SixRequestsInputs, six_requests),
}


def run_walkthrough(name: str, inputs: BaseModel | None = None) -> list[Step]:
    """The steps of walkthrough `name` (primer defaults when no inputs are given)."""
    w = WALKTHROUGHS[name]
    return w.run(inputs if inputs is not None else w.inputs())


WALKTHROUGHS["disaggregation"] = Walkthrough(
    "When to disaggregate prefill and decode", "§9", DisaggInputs, disaggregation
)
