"""KV offload as a server runs it: which tiers, how big, on which host, under which engine's rules, turned into
the simulator's OffloadConfig (planner/sim/offload_tiers.py) and into the engine's own flags.

Sizes follow the engines (offload_tiers note for the code read): vLLM's `cpu_bytes_to_use` is the whole
replica's host pool; SGLang's `--hicache-size` is GB per rank and its default is `--hicache-ratio 2.0` x the
device pool. Without a size, the CPU tier here is SGLang's default rule, 2 x the GPU KV pool (vLLM has no default:
its launch line then says the bytes). The SSD tier's default is the host's NVMe share of the replica's GPUs.
Links: each GPU reloads its own shard over its own host link at the MEASURED host-to-device rate of
data/kv_tiers.yaml; the host of a GPU is data/hosts.yaml.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import yaml

from planner.core.errors import InputError
from planner.core.paths import data_path
from planner.core.scenario import Resolved
from planner.memory.sizes import kv_bytes_per_token
from planner.sim.offload_tiers import OffloadConfig

OFFLOAD_TIERS = ("cpu", "cpu+ssd")
OFFLOAD_ENGINES = ("vllm", "sglang")
SGLANG_HICACHE_RATIO = 2.0  # python/sglang/srt/server_args.py default hicache_ratio (HostKVCache sizing)
GIB = 2**30


@dataclass(frozen=True)
class KVOffload:
    """The user's offload choice: tiers, sizes for the whole replica (bytes; None = the default rule), host
    (None = the GPU's), write policy (None = the engine's default: write-through)."""

    tiers: str = "cpu"
    cpu_bytes: float | None = None
    ssd_bytes: float | None = None
    host: str | None = None
    write_policy: str | None = None

    def __post_init__(self):
        if self.tiers not in OFFLOAD_TIERS:
            raise InputError("kv_offload", f"must be one of {', '.join(OFFLOAD_TIERS)}, got {self.tiers!r}")
        for name in ("cpu_bytes", "ssd_bytes"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise InputError(name, f"must be > 0, got {v!r}")
        if self.write_policy not in (None, "write_through", "write_back"):
            raise InputError("hicache_write_policy", "must be write_through or write_back")


@lru_cache(maxsize=1)
def _tiers() -> dict:
    return yaml.safe_load(data_path("kv_tiers.yaml").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def hosts() -> dict:
    return yaml.safe_load(data_path("hosts.yaml").read_text(encoding="utf-8"))


def host_for(gpu_id: str, host: str | None = None) -> tuple[str, dict]:
    """The host (data/hosts.yaml) named, or the one that lists this GPU."""
    table = hosts()
    if host is not None:
        if host not in table:
            raise InputError("offload_host", f"unknown host {host!r}; use one of {', '.join(table)}")
        return host, table[host]
    for hid, h in table.items():
        if gpu_id in h["gpus"]:
            return hid, h
    raise InputError("offload_host", f"no host in data/hosts.yaml lists GPU {gpu_id}; name one ({', '.join(table)})")


def _link(tier_id: str) -> tuple[float, float]:
    t = _tiers()[tier_id]
    return float(t.get("measured_bytes_per_s", t["bytes_per_s"])), float(t["latency_s"])


def offload_config(r: Resolved, kv: KVOffload, num_gpu_blocks: int) -> OffloadConfig:
    """The simulator's tiers for replica `r` with a GPU pool of num_gpu_blocks blocks (module note)."""
    if r.engine.id not in OFFLOAD_ENGINES:
        raise InputError("kv_offload", f"KV offload is modelled for {' and '.join(OFFLOAD_ENGINES)}, not {r.engine.id}")
    if kv.write_policy == "write_back" and r.engine.id != "sglang":
        raise InputError("hicache_write_policy", "write_back is SGLang's; vLLM's OffloadingConnector writes through")
    tp, bs = r.deployment.tensor_parallel_size, r.deployment.block_size
    _, host = host_for(r.gpu.id, kv.host)
    block_bytes_gpu = kv_bytes_per_token(r.model, r.kv_bytes, tp) * bs  # one GPU's shard of one block
    block_bytes_replica = block_bytes_gpu * tp
    cpu_blocks = (
        int(kv.cpu_bytes // block_bytes_replica) if kv.cpu_bytes else int(SGLANG_HICACHE_RATIO * num_gpu_blocks)
    )
    if cpu_blocks < 1:
        raise InputError("cpu_offload_gib", "holds less than one KV block")
    cpu_bps, cpu_lat = _link(host["cpu_link"])
    ssd_blocks, ssd_bps, ssd_lat = 0, 1.0, 0.0
    if kv.tiers == "cpu+ssd":
        ssd_bytes = kv.ssd_bytes or float(host["ssd_bytes_per_gpu"]) * tp
        ssd_blocks = int(ssd_bytes // block_bytes_replica)
        ssd_bps, ssd_lat = _link(host["ssd_link"])
    return OffloadConfig(
        cpu_blocks=cpu_blocks,
        block_bytes_per_gpu=block_bytes_gpu,
        cpu_bytes_per_s=cpu_bps,
        cpu_latency_s=cpu_lat,
        ssd_blocks=ssd_blocks,
        ssd_bytes_per_s=ssd_bps,
        ssd_latency_s=ssd_lat,
        write_policy=kv.write_policy or "write_through",
        ssd_write_through=r.engine.id == "sglang" and ssd_blocks > 0,
    )


def engine_flags(r: Resolved, cfg: OffloadConfig) -> str:
    """The engine's own flags for these tiers (vLLM: --kv-transfer-config OffloadingConnector; SGLang: HiCache)."""
    tp = r.deployment.tensor_parallel_size
    cpu_bytes = cfg.cpu_blocks * cfg.block_bytes_per_gpu * tp
    if r.engine.id == "vllm":
        extra = {"cpu_bytes_to_use": int(cpu_bytes)}
        conf = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both", "kv_connector_extra_config": extra}
        return f"--kv-transfer-config '{json.dumps(conf, separators=(',', ':'))}'"
    flags = f"--enable-hierarchical-cache --hicache-size {cpu_bytes / tp / 1e9:.0f} "  # GB per rank
    flags += f"--hicache-write-policy {cfg.write_policy}"
    return flags + (" --hicache-storage-backend file" if cfg.ssd_blocks else "")


@dataclass(frozen=True)
class OffloadSummary:
    """What the tiers did in one run: hit rates per tier (prompt tokens served from each / prompt tokens of the
    admitted requests, as prefix_hit_rate), reloads and their seconds, and the engine's flags for the tiers."""

    tiers: str
    host: str
    write_policy: str
    cpu_gib: float
    ssd_gib: float
    cpu_link_bytes_per_s: float
    hit_rate: dict  # gpu, cpu (, ssd): fractions of prompt tokens; they add up to prefix_hit_rate
    num_reloads: int
    reload_s: float  # total seconds charged to steps
    mean_reload_s: float | None  # per reload
    engine_flags: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def offload_summary(r: Resolved, kv: KVOffload, cfg: OffloadConfig, res) -> OffloadSummary:
    """Summary of a run `res` (a SimResult whose `offload` holds the tiers' OffloadStats)."""
    stats, req = res.offload, res.requests
    admitted = ~np.isnan(req.first_scheduled_s)
    prompt = float(req.prompt_tokens[admitted].sum())
    tier_rates = {t: (stats.hit_tokens(t) / prompt if prompt else 0.0) for t in stats.hit_entries}
    total = float(req.prefix_hit_tokens.sum()) / prompt if prompt else 0.0
    tp = r.deployment.tensor_parallel_size
    replica_block = cfg.block_bytes_per_gpu * tp
    return OffloadSummary(
        tiers=kv.tiers,
        host=host_for(r.gpu.id, kv.host)[0],
        write_policy=cfg.write_policy,
        cpu_gib=cfg.cpu_blocks * replica_block / GIB,
        ssd_gib=cfg.ssd_blocks * replica_block / GIB,
        cpu_link_bytes_per_s=cfg.cpu_bytes_per_s,
        hit_rate={"gpu": total - sum(tier_rates.values()), **tier_rates},
        num_reloads=stats.num_reloads,
        reload_s=stats.reload_s,
        mean_reload_s=stats.reload_s / stats.num_reloads if stats.num_reloads else None,
        engine_flags=engine_flags(r, cfg),
    )
