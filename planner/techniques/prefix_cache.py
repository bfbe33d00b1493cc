"""Prefix caching as a what-if (primer §5 step 5, §7): reuse the KV cache of a shared prompt prefix.

    cached tokens      = hit rate × shared prefix (vLLM caches whole blocks: floor(prefix / block) × block)
    prefill FLOPs saved = 2 × matmul params × cached + attention FLOPs per pair × cached (cached + 1) / 2
    TTFT               = queue wait + (prompt − cached) / prefill rate      (given rates; 2,000 − 1,500 → 240 → 90 ms)
    KV blocks saved    = (requests sharing − 1) × prefix blocks            (one copy serves them all)

The hit rate can be measured on a trace whose requests carry prefix-block hash ids (Mooncake: one id per 512
tokens, equal ids = the same prefix up to that block). A block hits when its id was seen before and every earlier
block of the same request hit too (the match must be exact from the first token). Two caches are counted: an
infinite one (every block ever seen stays) and an LRU cache of a given number of blocks, which ignores that
running requests also need private blocks (an optimistic bound for a pool of that size).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from planner.core.units import ceil_div
from planner.latency.metrics import given_rates
from planner.latency.perf_model import PerfModel
from planner.traffic.generators import Workload


def cacheable_tokens(prefix_tokens: int, block_size: int) -> int:
    """vLLM caches full blocks only: floor(prefix / block_size) × block_size."""
    return prefix_tokens // block_size * block_size


def prefix_blocks(prefix_tokens: int, block_size: int) -> int:
    """Full KV blocks a prefix fills."""
    return prefix_tokens // block_size


def kv_blocks_saved(prefix_tokens: int, block_size: int, num_sharing: int) -> int:
    """(requests sharing − 1) × prefix blocks: one cached copy serves every request."""
    return max(num_sharing - 1, 0) * prefix_blocks(prefix_tokens, block_size)


def max_requests_shared(pool_blocks: int, request_tokens: int, prefix_tokens: int, block_size: int) -> int:
    """Requests that fit when the prefix blocks are stored once: (pool − prefix) // (request − prefix) blocks."""
    shared = prefix_blocks(prefix_tokens, block_size)
    private = ceil_div(request_tokens, block_size) - shared
    if pool_blocks < shared or private <= 0:
        return 0
    return (pool_blocks - shared) // private


def usable_cached(prompt_tokens: int, cached_tokens: int) -> int:
    """At most prompt − 1 tokens come from the cache: the last prompt token is always computed (it makes the logits)."""
    return max(0, min(cached_tokens, prompt_tokens - 1))


def prefill_flops(pm: PerfModel, new_tokens: int, cached_tokens: int = 0) -> float:
    """FLOPs of one prompt's prefill over all GPUs of the TP group (matmuls + causal attention)."""
    return float(pm.prefill(1, new_tokens, cached_tokens).flops) * pm.tp


def prefill_flops_saved(pm: PerfModel, prompt_tokens: int, cached_tokens: int) -> float:
    """Prefill FLOPs of the whole prompt minus those of the uncached suffix."""
    cached_tokens = usable_cached(prompt_tokens, cached_tokens)
    return prefill_flops(pm, prompt_tokens) - prefill_flops(pm, prompt_tokens - cached_tokens, cached_tokens)


@dataclass(frozen=True)
class TTFTPair:
    before_s: float
    after_s: float


def ttft_given_rates(
    prompt_tokens: int, cached_tokens: int, queue_wait_s: float, prefill_tokens_per_s: float
) -> TTFTPair:
    """TTFT = wait + (prompt − cached) / rate, before and after caching (primer §5: 240 → 90 ms)."""
    cached_tokens = usable_cached(prompt_tokens, cached_tokens)
    before = given_rates(prompt_tokens, 1, queue_wait_s, prefill_tokens_per_s, 1.0).ttft_s
    after = given_rates(prompt_tokens, 1, queue_wait_s, prefill_tokens_per_s, 1.0, cached_tokens).ttft_s
    return TTFTPair(before, after)


def ttft_model(pm: PerfModel, prompt_tokens: int, cached_tokens: int, queue_wait_s: float = 0.0) -> TTFTPair:
    """TTFT from the roofline: prefill of the whole prompt vs of the suffix reading the cached prefix."""
    cached_tokens = usable_cached(prompt_tokens, cached_tokens)
    before = float(pm.prefill(1, prompt_tokens).total_s)
    after = float(pm.prefill(1, prompt_tokens - cached_tokens, cached_tokens).total_s)
    return TTFTPair(queue_wait_s + before, queue_wait_s + after)


def stable_first_example(stable_tokens: int, changing_tokens: int, block_size: int) -> dict[str, int]:
    """Cached tokens per request when stable text leads vs when a changing part (time, user message) leads."""
    return {
        "stable_first": cacheable_tokens(stable_tokens, block_size),
        "changing_first": 0,
        "prompt_tokens": stable_tokens + changing_tokens,
    }


# -- hit rate on a trace ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TraceHitRate:
    num_requests: int
    num_blocks: int  # prefix blocks over all requests
    hit_blocks_infinite: int
    hit_blocks_lru: int | None
    cache_blocks: int | None  # LRU capacity in trace blocks (None: not computed)
    block_tokens: int
    hit_tokens_infinite: int  # prompt tokens covered by hit blocks (the last block may be partial)
    prompt_tokens: int

    @property
    def hit_rate_infinite(self) -> float:
        return self.hit_blocks_infinite / self.num_blocks if self.num_blocks else 0.0

    @property
    def hit_rate_lru(self) -> float | None:
        if self.hit_blocks_lru is None:
            return None
        return self.hit_blocks_lru / self.num_blocks if self.num_blocks else 0.0

    @property
    def token_hit_rate_infinite(self) -> float:
        return self.hit_tokens_infinite / self.prompt_tokens if self.prompt_tokens else 0.0


def _leading_hits(ids, seen) -> int:
    """Blocks matched from the first one: stop at the first id not seen before."""
    n = 0
    for h in ids:
        if h not in seen:
            break
        n += 1
    return n


def _lru_hits(prefixes, capacity: int) -> int:
    cache: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for ids in prefixes:
        matched = True
        for h in ids.tolist():
            if matched and h in cache:
                hits += 1
                cache.move_to_end(h)
                continue
            matched = False
            cache[h] = None
            cache.move_to_end(h)
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits


def trace_hit_rate(w: Workload, cache_blocks: int | None = None) -> TraceHitRate:
    """Fraction of prompt blocks whose hash id was seen earlier (infinite cache) and under an LRU of cache_blocks."""
    if w.prefix_ids is None:
        raise ValueError("the trace has no prefix hash ids")
    seen: set[int] = set()
    hits = hit_tokens = total = 0
    bt = w.prefix_block_tokens
    for ids, prompt in zip(w.prefix_ids, w.prompt_tokens.tolist()):
        lst = ids.tolist()
        n = _leading_hits(lst, seen)
        hits += n
        hit_tokens += min(n * bt, prompt)
        total += len(lst)
        seen.update(lst)
    lru = _lru_hits(w.prefix_ids, cache_blocks) if cache_blocks else None
    return TraceHitRate(
        num_requests=w.num_requests,
        num_blocks=total,
        hit_blocks_infinite=hits,
        hit_blocks_lru=lru,
        cache_blocks=cache_blocks,
        block_tokens=bt,
        hit_tokens_infinite=hit_tokens,
        prompt_tokens=int(np.sum(w.prompt_tokens)),
    )


def trace_cache_blocks(kv_pool_tokens: int, block_tokens: int) -> int:
    """The scenario's KV pool in trace blocks: floor(pool tokens / tokens per trace block)."""
    return kv_pool_tokens // block_tokens
