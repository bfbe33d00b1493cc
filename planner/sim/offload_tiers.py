"""KV offload tiers inside the simulator: prefix blocks kept in CPU memory (and on SSD) after the GPU's prefix
cache lets them go, and what bringing them back costs.

What the engines do (read at pinned commits):
- vLLM's OffloadingConnector (vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py @
  7368908123b14495cca88daf580cbc07c384d5b3): WRITE-THROUGH. `_get_reqs_to_store` stores every full block a
  request has computed after each step, whether or not the GPU will evict it; `get_num_new_matched_tokens`
  looks up the blocks that follow the GPU prefix hit (`start_block_idx = num_computed_tokens // block`), and
  touches the request's blocks in the CPU LRU. The host pool is `cpu_bytes_to_use` for the WHOLE replica
  (vllm/v1/kv_offload/cpu/spec.py @ 6dfd8b55c5e625fe367568bdad95a4ad9ff97f99: num_blocks = cpu_bytes_to_use //
  (page bytes x layers x world_size)); eviction LRU (the default `eviction_policy`).
- SGLang HiCache (python/sglang/srt/mem_cache/hiradix_cache.py @ 263bc85d64baa38d82ec20f58a61f2982c78075d):
  `--hicache-write-policy write_through` (server_args default) backs a node up to host memory on its first hit
  (write_through_threshold = 1), `write_through_selective` on its second, `write_back` only when the device
  evicts it (`evict`: write_backup(x, write_back=True)). Host pool PER RANK (memory_pool_host.py @
  b03961450fcb48aa539b81d1104bce95e4dcd5e1 HostKVCache): `--hicache-size` GB (1e9) if > 0, else
  `--hicache-ratio` (default 2.0) x the device pool's tokens, and it must exceed the device pool. With
  `--hicache-storage-backend`, a host copy is written on to storage as soon as it completes (write_backup_storage).

Here: a tier is an LRU of prefix hash ids (one id = `blocks_per_prefix` KV blocks). Write-through stores each
block as it is published to the GPU prefix cache; write-back stores it when the GPU evicts it (the block pool's
`on_prefix_evicted` hook). A CPU LRU victim goes to the SSD tier, or, when the engine writes host copies on to
storage (SGLang), every stored block is also on SSD. A request that misses on GPU after its GPU hits asks the
tiers how many FURTHER consecutive ids they hold (exact prefix, as both engines match); those are reloaded:
they take GPU blocks again (published as cached), count as computed tokens, and

    reload_s = sum over tiers used of (latency + entries x bytes per entry on one GPU / link bytes per second)

is added to the step that schedules the request's first chunk (each GPU of a TP group reloads its own shard
over its own link, in parallel). SGLang loads back before that batch's forward; vLLM loads asynchronously while
other requests run, so charging the step is an upper bound on what the others pay there.
Left out: the device-to-host copies competing with reloads for the link, write_through_selective's second-hit
rule, SGLang's prefetch timeouts from storage, LMCache's chunked (256-token) hashing.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

WRITE_POLICIES = ("write_through", "write_back")


class OffloadConfig(BaseModel):
    """Offload tiers of one replica as the simulator sees them: sizes in KV blocks, links per GPU."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_blocks: int = Field(gt=0, description="KV blocks the CPU tier holds (whole replica)")
    block_bytes_per_gpu: float = Field(gt=0, description="bytes of one KV block on one GPU (its TP shard)")
    cpu_bytes_per_s: float = Field(gt=0, description="host -> one GPU, one direction")
    cpu_latency_s: float = Field(0.0, ge=0)
    ssd_blocks: int = Field(0, ge=0, description="KV blocks the SSD tier holds (0 = no SSD tier)")
    ssd_bytes_per_s: float = Field(1.0, gt=0, description="SSD -> one GPU, one direction")
    ssd_latency_s: float = Field(0.0, ge=0)
    write_policy: Literal["write_through", "write_back"] = "write_through"
    ssd_write_through: bool = False  # every host copy is also written to storage (SGLang's storage backend)


class Tier:
    """One LRU of prefix hash ids (front = least recently used) with its link."""

    def __init__(self, name: str, capacity: int, bytes_per_s: float, latency_s: float):
        self.name, self.capacity, self.bytes_per_s, self.latency_s = name, capacity, bytes_per_s, latency_s
        self.ids: OrderedDict[int, None] = OrderedDict()
        self.num_hit_entries = 0

    def put(self, h: int) -> int | None:
        """Store (or refresh) h; returns the id evicted to make room, if any."""
        ids = self.ids
        if h in ids:
            ids.move_to_end(h)
            return None
        ids[h] = None
        if len(ids) > self.capacity:
            return ids.popitem(last=False)[0]
        return None

    def transfer_s(self, num_entries: int, entry_bytes: float) -> float:
        """latency + entries x bytes per entry / link bytes per second (0 when nothing moves)."""
        return self.latency_s + num_entries * entry_bytes / self.bytes_per_s if num_entries else 0.0


def reload_time_s(num_blocks: int, block_bytes: float, bytes_per_s: float, latency_s: float) -> float:
    """Reload of num_blocks KV blocks over one link: latency + blocks x bytes per block / bytes per second."""
    return latency_s + num_blocks * block_bytes / bytes_per_s if num_blocks else 0.0


@dataclass
class OffloadStats:
    """What the tiers did in one run (per tier: entries hit, in prefix ids; reload seconds charged)."""

    prefix_block_tokens: int
    hit_entries: dict[str, int] = field(default_factory=dict)
    num_reloads: int = 0  # admissions that reloaded something
    reload_s: float = 0.0  # total seconds charged to steps
    stored_entries: int = 0

    def hit_tokens(self, tier: str) -> int:
        return self.hit_entries.get(tier, 0) * self.prefix_block_tokens

    def merged(self, other: OffloadStats) -> OffloadStats:
        keys = dict.fromkeys([*self.hit_entries, *other.hit_entries])
        return OffloadStats(
            self.prefix_block_tokens,
            {k: self.hit_entries.get(k, 0) + other.hit_entries.get(k, 0) for k in keys},
            self.num_reloads + other.num_reloads,
            self.reload_s + other.reload_s,
            self.stored_entries + other.stored_entries,
        )


class OffloadTiers:
    """The CPU tier (and the SSD tier) of one replica (module note)."""

    def __init__(self, cfg: OffloadConfig, blocks_per_prefix: int, prefix_block_tokens: int):
        self.cfg = cfg
        self.entry_bytes = blocks_per_prefix * cfg.block_bytes_per_gpu  # one prefix id on one GPU
        self.cpu = Tier("cpu", cfg.cpu_blocks // blocks_per_prefix, cfg.cpu_bytes_per_s, cfg.cpu_latency_s)
        ssd_entries = cfg.ssd_blocks // blocks_per_prefix
        self.ssd = Tier("ssd", ssd_entries, cfg.ssd_bytes_per_s, cfg.ssd_latency_s) if ssd_entries else None
        self.write_back = cfg.write_policy == "write_back"
        self.stats = OffloadStats(prefix_block_tokens, {"cpu": 0, "ssd": 0} if self.ssd else {"cpu": 0})

    def store(self, hash_ids) -> None:
        """Blocks copied to host memory (write-through: as published; write-back: as the GPU evicts them)."""
        cpu, ssd = self.cpu, self.ssd
        for h in hash_ids:
            self.stats.stored_entries += 1
            victim = cpu.put(h)
            if ssd is None:
                continue
            if self.cfg.ssd_write_through:
                ssd.put(h)
            elif victim is not None:
                ssd.put(victim)

    def on_gpu_evict(self, h: int) -> None:
        """The block pool's hook: a prefix id left the GPU (stored now under write-back)."""
        self.store((h,))

    def touch(self, hash_ids) -> None:
        """GPU hits refresh their host copies in the CPU LRU (vLLM's manager.touch on lookup)."""
        ids = self.cpu.ids
        for h in hash_ids:
            if h in ids:
                ids.move_to_end(h)

    def lookup(self, hash_ids, start: int, limit: int, on_gpu) -> int:
        """How many ids from hash_ids[start] on (before `limit`) a tier holds, consecutively (exact prefix);
        stops at an id still cached on the GPU (`on_gpu`)."""
        cpu, ssd, n = self.cpu.ids, self.ssd.ids if self.ssd else (), 0
        for h in hash_ids[start:limit]:
            if (h not in cpu and h not in ssd) or h in on_gpu:
                break
            n += 1
        return n

    def reload(self, hash_ids) -> float:
        """Take these ids back to the GPU: seconds to reload them (CPU hits refreshed, SSD hits promoted to CPU)."""
        cpu = self.cpu.ids
        from_cpu = [h for h in hash_ids if h in cpu]
        num_ssd = len(hash_ids) - len(from_cpu)
        self.touch(from_cpu)
        seconds = self.cpu.transfer_s(len(from_cpu), self.entry_bytes)
        if num_ssd:
            seconds += self.ssd.transfer_s(num_ssd, self.entry_bytes)
            self.store([h for h in hash_ids if h not in cpu])
            self.stats.hit_entries["ssd"] += num_ssd
        self.stats.hit_entries["cpu"] += len(from_cpu)
        self.stats.num_reloads += 1
        self.stats.reload_s += seconds
        return seconds
