"""Serving engines as first-class objects (data/engines.yaml): efficiency profile + memory accounting + admission
policy + all-reduce algorithm + supported weight formats + defaults, each with its upstream source in the file.

    engine_supports(engine, weights)   may this engine run this weight format? (GGUF k-quants: llama.cpp only)
    kv_pool_bytes(engine, ...)         KV-cache bytes per GPU under the engine's own memory rule
    allreduce_s(engine, ...)           one tensor-parallel all-reduce of `nbytes` under the engine's algorithm
    llamacpp_slots(n_ctx, np)          llama-server: tokens per slot and KV cells allocated

Memory rules (bytes per GPU; `total` = device memory the runtime reports, `weights` per GPU):
    vllm-profiler          gpu_memory_utilization × total − weights − activation peak − non-torch − graphs
                           (planner.memory.vllm_pool implements it in full; here for comparison)
    trtllm-free-fraction   0.9 × (total − weights − activation peak − non-torch)     (free memory after a warm-up)
    sglang-static          mem_fraction_static × total − weights, mem_fraction_static = (total − reserved) / total,
                           reserved MiB = 512 + 1.5 × max(chunked_prefill, 2048) + 1024 × tp / 8 + 2 × graph max bs,
                           at least 10 GiB when total > 60 GiB (sglang server_args.py _handle_gpu_memory_settings)
    llamacpp-context       n_ctx × KV bytes per token, allocated up front (fixed; split n_ctx / -np per slot)
    lmdeploy-free-fraction 0.8 × (total − weights − non-torch)                        (cache_max_entry_count)

All-reduce (engines.md §5, vLLM csrc/custom_all_reduce.cuh): with `custom`, TP 2 (any link) or a fully connected link
(NVLink / NVSwitch / Infinity Fabric) below 8 MiB runs one-shot (TP ≤ 4 below 512 KiB, TP ≤ 8 below 256 KiB, TP 2
always): latency + (TP − 1) × bytes / link; else two-shot: 2 × latency + 2 (TP − 1)/TP × bytes / link. The
thresholds exist to pick the faster kernel, so the model takes the cheaper of the two (continuous and monotone in
bytes); above 8 MiB NCCL's pipelined ring costs about a two-shot. Otherwise (PCIe beyond TP 2, `nccl` engines):
NCCL ring, 2 (TP − 1) hops of latency / 2 + 2 (TP − 1)/TP × bytes / link. The hop latency (half a
one-shot) follows vLLM PR #24532 (H100 TP4, 0.5 MB: custom one-shot 10 µs, NCCL 21 µs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from planner.core.catalog import DATA_DIR, _read_yaml
from planner.core.errors import InputError

ENGINES_PATH = DATA_DIR / "engines.yaml"
GIB, MIB = 2**30, 2**20
CUSTOM_AR_MAX_BYTES = 8 * MIB
FULLY_CONNECTED = ("nvlink", "infinity fabric", "nvswitch", "xgmi")


@dataclass(frozen=True)
class Engine:
    id: str
    label: str
    memory: str
    policy: str  # planner.sim SchedulerConfig.policy
    allreduce: str  # custom | nccl | none
    formats: tuple[str, ...]
    defaults: dict = field(default_factory=dict)
    eager_layer_overhead_s: float = 0.0
    fp16_accumulate: bool = False  # 16-bit GEMMs accumulate in FP16 (GeForce parts run those at twice the rate)
    hopper_wgmma: bool = True  # Hopper-native warpgroup MMA kernels; False = Ampere-style mma.sync only
    issue_bound_gemv: bool = False  # batch-1 weight streaming limited per SM (profile sm_bytes_per_cycle applies)
    source: str = ""


@lru_cache(maxsize=1)
def engines() -> dict[str, Engine]:
    data = _read_yaml(ENGINES_PATH).get("engines") or {}
    out = {}
    for eid, e in data.items():
        out[eid] = Engine(
            id=eid,
            label=e["label"],
            memory=e["memory"],
            policy=e["policy"],
            allreduce=e["allreduce"],
            formats=tuple(e["formats"]),
            defaults=dict(e.get("defaults") or {}),
            eager_layer_overhead_s=float(e.get("eager_layer_overhead_s", 0.0)),
            fp16_accumulate=bool(e.get("fp16_accumulate", False)),
            hopper_wgmma=bool(e.get("hopper_wgmma", True)),
            issue_bound_gemv=bool(e.get("issue_bound_gemv", False)),
            source=" ".join(str(e.get("source", "")).split()),
        )
    return out


def get_engine(engine: str, field_name: str = "engine") -> Engine:
    table = engines()
    key = (engine or "").strip().lower()
    if key not in table:
        raise InputError(field_name, f"unknown engine {engine!r}; known: {', '.join(table)}")
    return table[key]


def engine_supports(engine: str, weights: str) -> bool:
    """True when `engine` runs weights in format `weights` (a precisions.yaml id); False for unknown engines."""
    e = engines().get((engine or "").lower())
    return e is not None and weights.lower() in e.formats


def scheduler_policy(engine: str) -> str:
    """The simulator's admission policy name for this engine (vllm-v1, guaranteed-no-evict, sglang, static-slots)."""
    return get_engine(engine).policy


# -- all-reduce ---------------------------------------------------------------------------------------------------
def fully_connected(interconnect: str) -> bool:
    return any(k in (interconnect or "").lower() for k in FULLY_CONNECTED)


def allreduce_s(algorithm: str, tp: int, nbytes, latency_s: float, link_bytes_per_s: float, interconnect: str):
    """Time of one all-reduce of `nbytes` (scalar or numpy array) across `tp` GPUs (see the module note)."""
    import numpy as np

    if tp <= 1 or algorithm == "none":
        return np.zeros_like(np.asarray(nbytes, dtype=float)) if np.ndim(nbytes) else 0.0
    b = np.asarray(nbytes, dtype=float)
    ring = 2 * (tp - 1) * latency_s / 2 + 2 * (tp - 1) / tp * b / link_bytes_per_s
    if algorithm != "custom" or not (tp == 2 or (fully_connected(interconnect) and tp in (4, 6, 8))):
        out = ring
    else:  # the engine's thresholds pick the faster kernel: model that choice as the minimum (monotone in bytes)
        one = latency_s + (tp - 1) * b / link_bytes_per_s
        two = 2 * latency_s + 2 * (tp - 1) / tp * b / link_bytes_per_s  # also NCCL's pipelined ring above 8 MiB
        out = np.where(b >= CUSTOM_AR_MAX_BYTES, two, np.minimum(one, two))
    return float(out) if np.ndim(out) == 0 else out


# -- KV memory per engine -----------------------------------------------------------------------------------------
def sglang_mem_fraction_static(total_bytes: float, tp: int, chunked_prefill: int | None = None) -> float:
    """SGLang's default mem_fraction_static for a GPU of `total_bytes` (server_args.py, gpu_mem in MiB)."""
    gpu_mem = total_bytes / MIB
    if chunked_prefill is None:
        chunked_prefill = (
            2048 if gpu_mem < 35 * 1024 else 4096 if gpu_mem < 60 * 1024 else 8192 if gpu_mem < 160 * 1024 else 16384
        )
    graph_bs = (
        8
        if gpu_mem < 20 * 1024
        else (24 if tp < 4 else 80)
        if gpu_mem < 35 * 1024
        else (32 if tp < 4 else 160)
        if gpu_mem < 60 * 1024
        else (256 if tp < 4 else 512)
        if gpu_mem < 160 * 1024
        else 512
    )
    reserved = 512 + 1.5 * max(chunked_prefill, 2048) + tp / 8 * 1024 + 2 * graph_bs
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mem - reserved) / gpu_mem, 3)


def llamacpp_slots(n_ctx: int, n_parallel: int = 1, unified: bool = False) -> tuple[int, int]:
    """(tokens one request may use, KV cells allocated) for llama-server: n_ctx padded to 256; split mode gives each
    of the -np slots n_ctx / np (padded to 256, total rounded down to slots × per-slot); unified mode shares all cells
    (src/llama-context.cpp, GGML_PAD(n_ctx, 256); tools/server/server.cpp n_ctx_slot)."""
    if n_ctx <= 0 or n_parallel <= 0:
        raise InputError("n_ctx" if n_ctx <= 0 else "n_parallel", "must be a positive integer")

    def pad(x: int) -> int:
        return -(-x // 256) * 256

    total = pad(n_ctx)
    if unified or n_parallel == 1:
        return total, total
    per_slot = pad(total // n_parallel)
    return per_slot, per_slot * n_parallel


def kv_pool_bytes(
    engine: str,
    total_bytes: float,
    weights_bytes: float,
    activation_bytes: float = 0.0,
    non_torch_bytes: float = 0.0,
    graph_bytes: float = 0.0,
    tp: int = 1,
    gpu_memory_utilization: float = 0.9,
    kv_bytes_per_token: float = 0.0,
    n_ctx: int | None = None,
) -> float:
    """KV-cache bytes per GPU under the engine's memory rule (module note); negative = the model does not fit."""
    e = get_engine(engine)
    if e.memory == "vllm-profiler":
        return gpu_memory_utilization * total_bytes - weights_bytes - activation_bytes - non_torch_bytes - graph_bytes
    if e.memory == "trtllm-free-fraction":
        frac = e.defaults.get("kv_cache_free_gpu_mem_fraction", 0.9)
        return frac * (total_bytes - weights_bytes - activation_bytes - non_torch_bytes - graph_bytes)
    if e.memory == "sglang-static":
        return sglang_mem_fraction_static(total_bytes, tp) * total_bytes - weights_bytes
    if e.memory == "lmdeploy-free-fraction":
        return e.defaults.get("cache_max_entry_count", 0.8) * (total_bytes - weights_bytes - non_torch_bytes)
    if e.memory == "llamacpp-context":
        ctx = n_ctx if n_ctx is not None else e.defaults.get("n_ctx", 4096)
        need = ctx * kv_bytes_per_token
        free = total_bytes - weights_bytes - non_torch_bytes
        return need if need <= free else free - need  # negative: the context does not fit
    raise InputError("engine", f"{engine}: unknown memory rule {e.memory!r} in engines.yaml")
