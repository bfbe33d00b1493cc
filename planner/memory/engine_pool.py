"""KV-cache bytes per GPU under each engine's own memory rule (data/engines.yaml `memory`).

    kv_pool_bytes(engine, ...)         KV-cache bytes per GPU under the engine's own memory rule
    sglang_mem_fraction_static(...)    SGLang's default mem_fraction_static for a GPU
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
"""

from __future__ import annotations

from planner.core.engine import get_engine
from planner.core.errors import InputError

GIB, MIB = 2**30, 2**20


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
