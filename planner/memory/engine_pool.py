"""KV-cache bytes per GPU under each engine's own memory rule (data/engines.yaml `memory`), and the pool the
memory plan reads (planner.memory.plan): bytes, tokens, blocks and concurrency under the scenario's engine.

    engine_pool(engine, ...)           the KV pool per GPU under the engine's rule (an EnginePool; vLLM: VllmPool)
    kv_pool_bytes(engine, ...)         KV-cache bytes per GPU under the engine's own memory rule
    sglang_mem_fraction_static(...)    SGLang's default mem_fraction_static for a GPU
    sglang_fraction(usable, dep)       the fraction SGLang runs with: the user's --mem-fraction-static, else the default
    llamacpp_slots(n_ctx, np)          llama-server: tokens per slot and KV cells allocated

Memory rules (bytes per GPU; `total` = device memory the runtime reports, `weights` per GPU):
    vllm-profiler          gpu_memory_utilization × total − weights − activation peak − non-torch − graphs
                           (planner.memory.vllm_pool implements it in full; here for comparison)
    trtllm-free-fraction   0.9 × (total − weights − activation peak − non-torch)     (free memory after a warm-up)
    sglang-static          mem_fraction_static × (total − init) − weights, init = what the runtime holds when it
                           measures its total (CUDA context; with a TP group its NCCL communicators, engines.yaml
                           tp_init_bytes); mem_fraction_static = (total − reserved) / total, reserved MiB = 512 + 1.5 ×
                           max(chunked_prefill, 2048) + 1024 × tp / 8 + 2 × graph max bs, at least 10 GiB when total
                           > 60 GiB (sglang server_args.py _handle_gpu_memory_settings). NCCL buffers, CUDA graphs
                           and activations allocated later come out of the reserve, not the pool
    llamacpp-context       n_ctx × KV bytes per token, allocated up front (fixed; split n_ctx / -np per slot)
    lmdeploy-free-fraction 0.8 × (total − weights − non-torch)                        (cache_max_entry_count)

Sources (data/engines.yaml `source` has each engine's commits): vLLM gpu_worker.determine_available_memory
(vllm-project/vllm@35d5cda); SGLang model_runner.profile_max_num_token, rest = available after the weights −
total × (1 − mem_fraction_static) with total = the memory available after init_torch_distributed, tokens = rest /
cell size (page_size 1), and server_args.py for the fraction
(sgl-project/sglang@001067ff); TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction = 0.9 "of free GPU memory"
after the engine's weights and activations, tokens_per_block 32 (nvidia.github.io/TensorRT-LLM
llm-api/reference/KvCacheConfig.html; _torch/pyexecutor/_util.py KvCacheCreator); LMDeploy TurbomindEngineConfig
cache_max_entry_count 0.8 of free memory, cache_block_seq_len 64 (InternLM/lmdeploy@1263d5c messages.py); llama.cpp
n_ctx cells allocated at start, n_ctx / -np per slot (ggml-org/llama.cpp@001d906 tools/server/server.cpp).

The planner's engine-neutral limits map onto each engine's: max_num_seqs = SGLang max_running_requests,
TensorRT-LLM max_batch_size, LMDeploy max_batch_size, llama.cpp -np (slots); max_num_batched_tokens = SGLang
chunked_prefill_size, TensorRT-LLM max_num_tokens, LMDeploy max_prefill_token_num, llama.cpp n_batch. Engines
that page their cache hand the simulator whole blocks of the deployment's block_size (num_gpu_blocks); the
token count (kv_cache_tokens) is the engine's own granularity.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.engine import Engine, get_engine
from planner.core.engine_defaults import sglang_chunked_prefill_size
from planner.core.errors import InputError
from planner.core.model_spec import ModelSpec
from planner.core.specs import Deployment
from planner.memory.vllm_pool import (
    VllmPool,
    activation_peak_bytes,
    runtime_overhead_bytes,
    vllm_constants,
    vllm_pool,
)

GIB, MIB = 2**30, 2**20


def sglang_mem_fraction_static(total_bytes: float, tp: int, chunked_prefill: int | None = None) -> float:
    """SGLang's default mem_fraction_static for a GPU of `total_bytes` (server_args.py, gpu_mem in MiB)."""
    gpu_mem = total_bytes / MIB
    if chunked_prefill is None:
        chunked_prefill = sglang_chunked_prefill_size(total_bytes)
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


def sglang_fraction(usable_bytes: float, dep: Deployment) -> float:
    """The mem_fraction_static SGLang runs `dep` with: the user's --mem-fraction-static, else SGLang's default for
    the GPU, TP and chunk size (the memory rule and the launch line both read it here)."""
    return getattr(dep, "mem_fraction_static", None) or sglang_mem_fraction_static(
        usable_bytes, dep.tensor_parallel_size, dep.max_num_batched_tokens
    )


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
    if e.memory == "sglang-static":  # available after the weights − total at init × (1 − fraction)
        init = sglang_init_bytes(e, tp, non_torch_bytes)
        budget = sglang_budget_bytes(sglang_mem_fraction_static(total_bytes, tp), total_bytes, init)
        return budget - init - weights_bytes
    if e.memory == "lmdeploy-free-fraction":
        return e.defaults.get("cache_max_entry_count", 0.8) * (total_bytes - weights_bytes - non_torch_bytes)
    if e.memory == "llamacpp-context":
        ctx = n_ctx if n_ctx is not None else e.defaults.get("n_ctx", 4096)
        need = ctx * kv_bytes_per_token
        free = total_bytes - weights_bytes - non_torch_bytes
        return need if need <= free else free - need  # negative: the context does not fit
    raise InputError("engine", f"{engine}: unknown memory rule {e.memory!r} in engines.yaml")


def sglang_init_bytes(e: Engine, tp_group: int, context_bytes: float) -> float:
    """Memory SGLang holds when model_runner measures the total its fraction applies to (after
    init_torch_distributed, before the weights): the CUDA context alone for one GPU (`context_bytes`), the measured
    figure with a TP group (engines.yaml tp_init_bytes: NCCL communicators and custom all-reduce buffers)."""
    return e.tp_init_bytes if tp_group > 1 and e.tp_init_bytes is not None else context_bytes


def sglang_budget_bytes(fraction: float, total_bytes: float, init_bytes: float) -> float:
    """What SGLang's rule lets weights, its init memory and the KV pool use: the fraction of what was free at init,
    plus the init memory itself; the rest of the GPU is SGLang's reserve (graphs, activations, later buffers)."""
    return fraction * (total_bytes - init_bytes) + init_bytes


# tokens per cache block in each engine's own allocator (SGLang pages of 1 token, llama.cpp cells of 1)
ENGINE_BLOCK_TOKENS = {"sglang-static": 1, "trtllm-free-fraction": 32, "lmdeploy-free-fraction": 64}


@dataclass(frozen=True)
class EnginePool(VllmPool):
    """The KV pool per GPU under a non-vLLM engine's memory rule (VllmPool's fields, same meanings; budget_bytes is
    what the rule lets weights, runtime and cache use), with the rule and, for llama.cpp, its slots."""

    rule: str = ""
    label: str = ""
    slots: int | None = None  # llama.cpp -np: requests that run at once (no paging)
    tokens_per_slot: int | None = None

    @property
    def log_lines(self) -> tuple[str, ...]:
        if self.slots is not None:
            return (
                f"{self.label}: {self.kv_cache_tokens:,} KV cells allocated at start, {self.slots} slot(s) of "
                f"{self.tokens_per_slot:,} tokens",
            )
        return (
            f"{self.label}: KV pool of {self.kv_cache_tokens:,} tokens",
            f"Maximum concurrency for {self.max_model_len:,} tokens per request: {self.max_concurrency:.2f}x",
        )


def engine_pool(
    e: Engine,
    usable_bytes: float,
    weights_per_gpu: float,
    kv_bytes_per_token_per_gpu: float,
    model: ModelSpec,
    dep: Deployment,
    max_model_len: int,
    interconnect: str = "",
) -> VllmPool:
    """The KV pool per GPU under engine `e`'s memory rule (module note): vLLM's profiled pool, or an EnginePool."""
    if e.memory == "vllm-profiler":
        kv_tok = kv_bytes_per_token_per_gpu
        return vllm_pool(usable_bytes, weights_per_gpu, kv_tok, model, dep, max_model_len, interconnect, e.version)
    non_torch, graphs = runtime_overhead_bytes(dep, interconnect=interconnect)
    if e.memory == "llamacpp-context":
        return _llamacpp_pool(
            e, usable_bytes, weights_per_gpu, kv_bytes_per_token_per_gpu, dep, max_model_len, non_torch
        )
    # TensorRT-LLM sizes its activations at max_num_tokens / max_batch_size before measuring free memory, as
    # vLLM's profile run does; SGLang's reserve and LMDeploy's remaining 20% hold theirs outside the fraction
    trtllm = e.memory == "trtllm-free-fraction"
    activation, graphs = (activation_peak_bytes(model, dep), graphs) if trtllm else (0.0, 0.0)
    if e.memory == "sglang-static":  # the chunked-prefill size is the engine's per-step token budget
        group = dep.tensor_parallel_size * dep.data_parallel_size
        non_torch = sglang_init_bytes(e, group, vllm_constants().non_torch_bytes)
        budget = sglang_budget_bytes(sglang_fraction(usable_bytes, dep), usable_bytes, non_torch)
        pool = budget - weights_per_gpu - non_torch
    else:
        budget = usable_bytes
        pool = kv_pool_bytes(e.id, usable_bytes, weights_per_gpu, activation, non_torch, graphs)
    per_block = ENGINE_BLOCK_TOKENS[e.memory] * kv_bytes_per_token_per_gpu
    tokens = max(0, int(pool // per_block)) * ENGINE_BLOCK_TOKENS[e.memory]
    return EnginePool(
        budget_bytes=budget,
        weights_bytes=weights_per_gpu,
        activation_bytes=activation,
        non_torch_bytes=non_torch,
        cuda_graph_bytes=graphs,
        kv_pool_bytes=pool,
        num_gpu_blocks=tokens // dep.block_size,
        kv_cache_tokens=tokens,
        max_model_len=max_model_len,
        max_concurrency=tokens / max_model_len,
        rule=e.memory,
        label=e.label,
    )


def _llamacpp_pool(e, usable_bytes, weights_per_gpu, kv_tok_gpu, dep, max_model_len, non_torch) -> EnginePool:
    """llama-server: -np slots (max_num_seqs) of max_model_len tokens each, n_ctx = slots × max_model_len cells
    allocated at start; no paging, so the concurrency is the slot count when the cells fit."""
    slots = dep.max_num_seqs
    per_slot, cells = llamacpp_slots(slots * max_model_len, slots)
    need = cells * kv_tok_gpu
    free = usable_bytes - weights_per_gpu - non_torch
    fits = need <= free
    return EnginePool(
        budget_bytes=usable_bytes,
        weights_bytes=weights_per_gpu,
        activation_bytes=0.0,
        non_torch_bytes=non_torch,
        cuda_graph_bytes=0.0,
        kv_pool_bytes=need if fits else free - need,
        num_gpu_blocks=cells // dep.block_size if fits else 0,
        kv_cache_tokens=cells if fits else 0,
        max_model_len=max_model_len,
        max_concurrency=float(slots) if fits else 0.0,
        rule=e.memory,
        label=e.label,
        slots=slots,
        tokens_per_slot=per_slot,
    )
