"""KV offload tiers: what reloading an evicted prefix from CPU memory or SSD costs, against recomputing it.

An engine with an offload tier (vLLM's offloading connector or LMCache, SGLang's HiCache) keeps KV blocks that
leave GPU memory in host DRAM (over PCIe, or NVLink-C2C on Grace parts) or on NVMe, and copies them back when a
request hits them. Reloading L tokens to one GPU takes

    reload_s = latency + L x KV bytes per token per GPU / link bytes per second

(each GPU of a TP group reloads its own shard over its own link). Recomputing them is a prefill of L tokens
(planner/latency/perf_model.py). Offload pays for a hit when reload_s < recompute_s; the tiers' figures are in
data/kv_tiers.yaml with their sources (this page uses the link rates; the serving simulator's tiers,
planner/sim/offload_tiers.py, use the measured host-to-device rates and add LRU between GPU, CPU and SSD with the
reload charged to TTFT). Not modelled: the copy out on eviction competing with the reload.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import yaml

from planner.core.errors import InputError
from planner.core.paths import data_path
from planner.core.scenario import Resolved
from planner.latency.perf_model import PerfModel
from planner.memory.sizes import kv_bytes_per_token


@dataclass(frozen=True)
class KVTier:
    id: str
    name: str
    bytes_per_s: float  # host -> one GPU, one direction
    latency_s: float
    source: str
    status: str


@lru_cache(maxsize=1)
def kv_tiers() -> dict[str, KVTier]:
    raw = yaml.safe_load(data_path("kv_tiers.yaml").read_text(encoding="utf-8"))
    return {
        k: KVTier(id=k, **{f: v[f] for f in ("name", "bytes_per_s", "latency_s", "source", "status")})
        for k, v in raw.items()
    }


def get_tier(tier_id: str) -> KVTier:
    tiers = kv_tiers()
    if tier_id not in tiers:
        raise InputError("kv_tier", f"unknown KV tier {tier_id!r}; use one of {', '.join(tiers)}")
    return tiers[tier_id]


def reload_time_s(tokens: float, kv_bytes_per_token_per_gpu: float, tier: KVTier) -> float:
    """latency + tokens x bytes per token / link bytes per second (one GPU's shard over its own link)."""
    return tier.latency_s + tokens * kv_bytes_per_token_per_gpu / tier.bytes_per_s


@dataclass(frozen=True)
class OffloadRow:
    tier: str
    reload_s: float
    recompute_s: float
    saved_s: float  # recompute - reload: > 0 when the tier pays for a hit
    status: str


def offload_report(r: Resolved, prefix_tokens: int, tiers: tuple[str, ...] | None = None) -> list[OffloadRow]:
    """For a hit on `prefix_tokens` evicted tokens: reload from each tier against recomputing them (one request)."""
    if not (isinstance(prefix_tokens, int) and prefix_tokens >= 1):
        raise InputError("prefix_tokens", f"must be a whole number >= 1, got {prefix_tokens!r}")
    per_gpu = kv_bytes_per_token(r.model, r.kv_bytes, r.deployment.tensor_parallel_size)
    pm = PerfModel(r)
    # a hit still pays the per-request overhead: recomputing costs the prefill of the prefix without it
    recompute_s = float(pm.prefill(1, prefix_tokens).total_s) - pm.request_overhead_s
    rows = []
    for tier in (get_tier(t) for t in (tiers or tuple(kv_tiers()))):
        reload = reload_time_s(prefix_tokens, per_gpu, tier)
        rows.append(OffloadRow(tier.id, reload, recompute_s, recompute_s - reload, tier.status))
    return rows
