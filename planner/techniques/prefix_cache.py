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

from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.core.units import ceil_div
from planner.latency.metrics import given_rates
from planner.latency.perf_model import PerfModel
from planner.memory.plan import plan_memory
from planner.traffic.workload import Workload


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

    def expected_s(self, hit_rate: float) -> float:
        """TTFT at a hit rate: hit × after + (1 − hit) × before."""
        return hit_rate * self.after_s + (1 - hit_rate) * self.before_s

    def to_ms_dict(self, hit_rate: float) -> dict[str, float]:
        """before, after (on a hit) and expected at the hit rate, in ms (the CLI's keys)."""
        return {"before": self.before_s * 1e3, "after": self.after_s * 1e3, "expected": self.expected_s(hit_rate) * 1e3}


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


@dataclass(frozen=True)
class StableFirstExample:
    stable_first: int  # cached tokens per request with the stable text first
    changing_first: int  # with a changing part (time, user message) first: nothing matches
    prompt_tokens: int


def stable_first_example(stable_tokens: int, changing_tokens: int, block_size: int) -> StableFirstExample:
    """Cached tokens per request when stable text leads vs when a changing part (time, user message) leads."""
    return StableFirstExample(cacheable_tokens(stable_tokens, block_size), 0, stable_tokens + changing_tokens)


@dataclass(frozen=True)
class PrefixReport:
    """Prefix caching on one scenario (the CLI's `prefix-cache` and the Techniques page): TTFT without and with a
    hit (given rates and roofline), prefill FLOPs saved, KV blocks saved and requests that fit with one shared copy."""

    model: str
    gpu: str
    prompt_tokens: int
    prefix_tokens: int
    cached_tokens_on_hit: int  # whole blocks of the prefix
    block_size: int
    hit_rate: float
    ttft_given: TTFTPair  # queue wait + (prompt − prefix) / given prefill rate
    ttft_model: TTFTPair  # roofline prefill, no queue
    prefill_flops_saved_on_hit: float
    prefill_flops_without: float
    matmul_flops_per_token: float  # the FLOPs formula's terms, over the TP group
    attn_flops_per_pair: float
    kv_blocks_saved: int
    kv_bytes_per_token_per_gpu: float
    pool_blocks: int
    pool_tokens: int
    max_requests_without_sharing: int
    max_requests_with_sharing: int

    @property
    def kv_bytes_saved(self) -> float:
        """Blocks saved × block size × KV bytes per token per GPU."""
        return self.kv_blocks_saved * self.block_size * self.kv_bytes_per_token_per_gpu

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "gpu": self.gpu,
            "prompt_tokens": self.prompt_tokens,
            "prefix_tokens": self.prefix_tokens,
            "cached_tokens_on_hit": self.cached_tokens_on_hit,
            "block_size": self.block_size,
            "hit_rate": self.hit_rate,
            "ttft_given_rates_ms": self.ttft_given.to_ms_dict(self.hit_rate),
            "ttft_model_ms": self.ttft_model.to_ms_dict(self.hit_rate),
            "prefill_flops_saved_on_hit": self.prefill_flops_saved_on_hit,
            "prefill_flops_without": self.prefill_flops_without,
            "kv_blocks_saved": self.kv_blocks_saved,
            "kv_bytes_saved": self.kv_bytes_saved,
            "max_requests_without_sharing": self.max_requests_without_sharing,
            "max_requests_with_sharing": self.max_requests_with_sharing,
        }


def prefix_report(
    r: Resolved,
    prompt_tokens: int,
    request_tokens: int,
    prefix_tokens: int,
    hit_rate: float = 1.0,
    num_sharing: int = 16,
    queue_wait_s: float = 0.04,
    prefill_tokens_per_s: float = 10_000.0,
) -> PrefixReport:
    """Prefix caching for requests of `request_tokens` (KV held) whose `prompt_tokens` start with a shared prefix."""
    pm, plan, bs = PerfModel(r), plan_memory(r), r.deployment.block_size
    cached = cacheable_tokens(prefix_tokens, bs)
    return PrefixReport(
        model=r.model.name,
        gpu=r.gpu.id,
        prompt_tokens=prompt_tokens,
        prefix_tokens=prefix_tokens,
        cached_tokens_on_hit=cached,
        block_size=bs,
        hit_rate=hit_rate,
        ttft_given=ttft_given_rates(prompt_tokens, prefix_tokens, queue_wait_s, prefill_tokens_per_s),
        ttft_model=ttft_model(pm, prompt_tokens, cached),
        prefill_flops_saved_on_hit=prefill_flops_saved(pm, prompt_tokens, cached),
        prefill_flops_without=prefill_flops(pm, prompt_tokens),
        matmul_flops_per_token=pm.flops_per_token * pm.tp,
        attn_flops_per_pair=(pm.attn_flops_full + pm.attn_flops_window) * pm.tp,
        kv_blocks_saved=kv_blocks_saved(prefix_tokens, bs, num_sharing),
        kv_bytes_per_token_per_gpu=plan.kv_bytes_per_token_per_gpu,
        pool_blocks=plan.num_gpu_blocks,
        pool_tokens=plan.kv_cache_tokens,
        max_requests_without_sharing=plan.num_gpu_blocks // ceil_div(request_tokens, bs),
        max_requests_with_sharing=max_requests_shared(plan.num_gpu_blocks, request_tokens, prefix_tokens, bs),
    )


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


@dataclass(frozen=True)
class TracePrefixReport:
    """The hit rate measured on a trace, with an infinite cache and with an LRU the size of the scenario's KV pool."""

    source: str
    hits: TraceHitRate
    lru_cache_blocks: int

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "requests": self.hits.num_requests,
            "blocks": self.hits.num_blocks,
            "block_tokens": self.hits.block_tokens,
            "hit_rate_infinite_cache": self.hits.hit_rate_infinite,
            "token_hit_rate_infinite_cache": self.hits.token_hit_rate_infinite,
            "lru_cache_blocks": self.lru_cache_blocks,
            "hit_rate_lru": self.hits.hit_rate_lru,
        }


def trace_prefix_report(w: Workload, kv_pool_tokens: int) -> TracePrefixReport:
    """Hit rates of a trace with prefix hash ids (Mooncake) against a KV pool of `kv_pool_tokens`."""
    if w.prefix_ids is None:
        raise InputError("trace", "this trace has no prefix hash ids (Mooncake has them)")
    blocks = trace_cache_blocks(kv_pool_tokens, w.prefix_block_tokens)
    return TracePrefixReport(w.source, trace_hit_rate(w, blocks), blocks)
