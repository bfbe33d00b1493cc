"""Routing policies of a fleet: which replica takes a request, decided at its arrival from what a router sees.

A router sees, per replica, its outstanding requests (sent and not yet finished: the router's own count), how
many of those wait for a batch slot, its KV-cache use (vLLM's `kv_cache_usage` gauge: blocks held by running
requests / the pool) and, for a prefix-aware router, how many leading prefix blocks of the request the replica
holds in its prefix cache. Ties go to the lowest replica index (deterministic; real routers pick at random).

- round-robin: request k to replica k mod N (sgl-router's round_robin policy; Kubernetes' default spread).
- least-outstanding: fewest outstanding requests (sgl-router's shortest-queue fallback; llm-d's active-request
  scorer).
- least-kv: lowest KV-cache use (the gateway-api-inference-extension kv-cache-utilization scorer on its own).
- prefix-aware: first sgl-router's balance guard, then llm-d's weighted scorers.
  Guard (sglang sgl-router/src/policies/cache_aware.rs @ b6f20641ad6bafc1278db74d1e13b0e9da47bd64): the fleet is
  imbalanced when max - min outstanding > balance_abs_threshold AND max > balance_rel_threshold x min; then the
  least-outstanding replica takes the request. Defaults 32 and 1.1: the policy's own CacheAwareConfig::default()
  (sgl-router/src/policies/mod.rs @ 08fc57426c9d59569eef21a05bb1106bb2c92537); the launch_router command line
  defaults to 64 and 1.5 instead.
  Scores (each in 0..1, summed with weights; the highest wins), as the endpoint picker's default profile
  (gateway-api-inference-extension default-plugins.yaml: queue-scorer 2, kv-cache-utilization-scorer 2,
  prefix-cache-scorer 3) plus llm-d's active-request scorer (weight 2):
    prefix: the longest cached prefix in blocks, min-max normalised over the replicas that hold at least one
      block (llm-d-inference-scheduler pkg/plugins/scorer/precise_prefix_cache.go @
      17abea8af978e6d8b49ac03834e0317884f07525 computeScoresFromKeyToPods, and utils.go @
      2202f3ca54371e64d835b2257a4bb802b2184ecb indexedScoresToNormalizedScoredPods: one holder scores 1, the
      others 0);
    queue: (max - waiting) / (max - min) over the replicas (1 when all are equal);
    kv: 1 - KV-cache use;
    active: (max - outstanding) / max, 1 for a replica with nothing in flight (llm-d-inference-scheduler
      pkg/plugins/scorer/active_request.go @ 139bcce2c631da70474516154a1e3dfaf9245a09 Score: the router's own
      count of requests sent and not yet complete).
  Why the active-request scorer is on: the queue scorer reads the engine's waiting queue, empty until a
  replica's batch or KV cache is full, and the KV scorer (2) alone cannot outweigh a cached prefix (3). On a
  shared system prompt the replica holding it then takes every request until the guard trips (the profile's
  three scorers with the 64/1.5 guard send all of them to one of 8 replicas: tests/test_fleet.py). Counting
  requests in flight pushes back from the first one: a holder busier than the rest loses its lead, the prompt
  gets cached everywhere, and the busiest of 8 replicas takes 15-16% of the requests (fair share 12.5%) at a
  higher hit rate than round robin (91.5% against 80%). llm-d's guides warn that a prefix weight above the load
  weights "may concentrate load on fewer pods"; active=0 gives the endpoint picker's profile as published.
  We read each replica's cache directly, as llm-d's precise scorer does from vLLM's KV events; sgl-router's
  approximate tree of routed text (and its cache_threshold) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from planner.core.errors import InputError

ROUTERS = ("round-robin", "least-outstanding", "least-kv", "prefix-aware")


class ReplicaView(NamedTuple):
    """One replica as the router sees it at an arrival (a named tuple: one per replica per arrival)."""

    outstanding: int  # sent and not finished or rejected
    waiting: int  # outstanding requests not in the running batch
    kv_use: float  # blocks held by running requests / pool blocks, 0..1
    cached_prefix_blocks: int = 0  # leading prefix blocks of this request in its prefix cache


@dataclass(frozen=True)
class PrefixAwareWeights:
    """The prefix-aware router's knobs (defaults: sgl-router's library balance thresholds, the llm-d profile
    weights)."""

    prefix: float = 3.0
    queue: float = 2.0
    kv: float = 2.0
    active: float = 2.0  # llm-d's active-request scorer (module note: why it is on)
    balance_abs_threshold: int = 32  # sgl-router CacheAwareConfig::default() (module note)
    balance_rel_threshold: float = 1.1


def _argmin(values) -> int:
    return min(range(len(values)), key=lambda k: (values[k], k))


def least_outstanding(views: list[ReplicaView]) -> int:
    return _argmin([v.outstanding for v in views])


def least_kv(views: list[ReplicaView]) -> int:
    return _argmin([v.kv_use for v in views])


def is_imbalanced(views: list[ReplicaView], w: PrefixAwareWeights) -> bool:
    """sgl-router: (max - min) > abs_threshold and max > rel_threshold x min, on outstanding requests."""
    loads = [v.outstanding for v in views]
    hi, lo = max(loads), min(loads)
    return hi - lo > w.balance_abs_threshold and hi > w.balance_rel_threshold * lo


def prefix_scores(views: list[ReplicaView]) -> list[float]:
    """llm-d's normalisation: min-max over the replicas holding >= 1 block; those holding none score 0."""
    held = [v.cached_prefix_blocks for v in views if v.cached_prefix_blocks > 0]
    if not held:
        return [0.0] * len(views)
    lo, hi = min(held), max(held)
    return [
        0.0 if v.cached_prefix_blocks <= 0 else 1.0 if hi == lo else (v.cached_prefix_blocks - lo) / (hi - lo)
        for v in views
    ]


def queue_scores(views: list[ReplicaView]) -> list[float]:
    """The queue scorer: (max - waiting) / (max - min), 1 for every replica when all wait equally."""
    q = [v.waiting for v in views]
    lo, hi = min(q), max(q)
    return [1.0 if hi == lo else (hi - x) / (hi - lo) for x in q]


def active_scores(views: list[ReplicaView]) -> list[float]:
    """llm-d's active-request scorer: (max - outstanding) / max, 1 for a replica with nothing in flight."""
    hi = max(v.outstanding for v in views)
    return [1.0 if v.outstanding == 0 else (hi - v.outstanding) / hi for v in views]


def prefix_aware(views: list[ReplicaView], w: PrefixAwareWeights = PrefixAwareWeights()) -> int:
    if is_imbalanced(views, w):
        return least_outstanding(views)
    pre, que, act = prefix_scores(views), queue_scores(views), active_scores(views)
    total = [
        w.prefix * p + w.queue * q + w.kv * (1.0 - v.kv_use) + w.active * a for p, q, a, v in zip(pre, que, act, views)
    ]
    return _argmin([-t for t in total])


class Router:
    """One routing policy with its state (round robin's counter)."""

    def __init__(self, policy: str, num_replicas: int, weights: PrefixAwareWeights | None = None):
        if policy not in ROUTERS:
            raise InputError("router", f"unknown router {policy!r}; use one of {', '.join(ROUTERS)}")
        self.policy, self.num_replicas = policy, num_replicas
        self.weights = weights or PrefixAwareWeights()
        self.num_routed = 0

    @property
    def needs_state(self) -> bool:
        """Round robin decides without looking at the replicas."""
        return self.policy != "round-robin"

    @property
    def needs_cache(self) -> bool:
        return self.policy == "prefix-aware"

    def choose(self, views: list[ReplicaView] | None) -> int:
        k = self.num_routed
        self.num_routed += 1
        if self.policy == "round-robin":
            return k % self.num_replicas
        if self.policy == "least-outstanding":
            return least_outstanding(views)
        if self.policy == "least-kv":
            return least_kv(views)
        return prefix_aware(views, self.weights)
