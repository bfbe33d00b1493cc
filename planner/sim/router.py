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
  least-outstanding replica takes the request. Defaults 64 and 1.5 (sgl-router's CacheAware config defaults).
  Scores (each in 0..1, summed with weights; the highest wins), as the endpoint picker's default profile
  (gateway-api-inference-extension default-plugins.yaml: queue-scorer 2, kv-cache-utilization-scorer 2,
  prefix-cache-scorer 3):
    prefix: the longest cached prefix in blocks, min-max normalised over the replicas that hold at least one
      block (llm-d-inference-scheduler pkg/plugins/scorer/precise_prefix_cache.go @
      17abea8af978e6d8b49ac03834e0317884f07525 computeScoresFromKeyToPods, and utils.go @
      2202f3ca54371e64d835b2257a4bb802b2184ecb indexedScoresToNormalizedScoredPods: one holder scores 1, the
      others 0);
    queue: (max - waiting) / (max - min) over the replicas (1 when all are equal);
    kv: 1 - KV-cache use.
  We read each replica's cache directly, as llm-d's precise scorer does from vLLM's KV events; sgl-router's
  approximate tree of routed text (and its cache_threshold) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.errors import InputError

ROUTERS = ("round-robin", "least-outstanding", "least-kv", "prefix-aware")


@dataclass(frozen=True)
class ReplicaView:
    """One replica as the router sees it at an arrival."""

    outstanding: int  # sent and not finished or rejected
    waiting: int  # outstanding requests not in the running batch
    kv_use: float  # blocks held by running requests / pool blocks, 0..1
    cached_prefix_blocks: int = 0  # leading prefix blocks of this request in its prefix cache


@dataclass(frozen=True)
class PrefixAwareWeights:
    """The prefix-aware router's knobs (defaults: sgl-router's balance thresholds, the llm-d profile weights)."""

    prefix: float = 3.0
    queue: float = 2.0
    kv: float = 2.0
    balance_abs_threshold: int = 64
    balance_rel_threshold: float = 1.5


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


def prefix_aware(views: list[ReplicaView], w: PrefixAwareWeights = PrefixAwareWeights()) -> int:
    if is_imbalanced(views, w):
        return least_outstanding(views)
    pre, que = prefix_scores(views), queue_scores(views)
    total = [w.prefix * p + w.queue * q + w.kv * (1.0 - v.kv_use) for p, q, v in zip(pre, que, views)]
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
