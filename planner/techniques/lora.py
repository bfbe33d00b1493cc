"""Multi-LoRA serving (primer §8): one base model in memory, a small adapter per request.

    adapter bytes = rank × Σ over target modules (d_in + d_out) × layers × bytes per value
                    (A is d_in × r, B is r × d_out; 16-bit adapters by default)

vLLM keeps `--max-loras` adapter slots at `--max-lora-rank` in GPU memory (more wait in CPU memory,
`--max-cpu-loras`), so every slot comes out of the KV pool; this module counts the slots for the modules chosen.
Dimensions come from the ModelSpec: q (h → heads × head dim), k and v (h → KV heads × head dim), o (heads × head
dim → h), gate and up (h → intermediate), down (intermediate → h). Mixture-of-experts MLPs and MLA projections
are not modelled (attention modules only are exact there). With TP the adapters shard like their base layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.model_spec import ModelSpec
from planner.core.scenario import Resolved
from planner.memory import sizes as memory
from planner.memory.vllm_pool import blocks_per_request, vllm_pool

ATTENTION_MODULES = ("q", "k", "v", "o")
MLP_MODULES = ("gate", "up", "down")
ALL_MODULES = ATTENTION_MODULES + MLP_MODULES
ADAPTER_BYTES = 2  # 16-bit adapters


def module_dims(m: ModelSpec) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of each LoRA-able linear layer of one transformer block."""
    h, q_out, kv_out, inter = (
        m.hidden_size,
        m.num_attention_heads * m.head_dim,
        m.num_kv_heads * m.head_dim,
        m.intermediate_size,
    )
    return {
        "q": (h, q_out),
        "k": (h, kv_out),
        "v": (h, kv_out),
        "o": (q_out, h),
        "gate": (h, inter),
        "up": (h, inter),
        "down": (inter, h),
    }


def adapter_bytes(m: ModelSpec, rank: int, modules=ATTENTION_MODULES, bytes_per_value: float = ADAPTER_BYTES) -> float:
    """rank × Σ(d_in + d_out) over target modules × layers × bytes."""
    dims = module_dims(m)
    unknown = [mod for mod in modules if mod not in dims]
    if unknown:
        raise ValueError(f"unknown LoRA target module(s) {', '.join(unknown)}; use {', '.join(ALL_MODULES)}")
    width = sum(dims[mod][0] + dims[mod][1] for mod in modules)
    return float(rank) * width * m.num_layers * bytes_per_value


@dataclass(frozen=True)
class LoraPlan:
    rank: int
    modules: tuple[str, ...]
    adapter_bytes: float  # one adapter, whole model
    adapter_bytes_per_gpu: float
    max_loras: int
    slots_bytes_per_gpu: float
    kv_pool_bytes_without: float
    kv_pool_bytes_with: float
    max_requests_without: int  # requests of context_tokens
    max_requests_with: int
    adapters_fit_in_pool: int  # if the whole KV pool held adapters instead (upper bound)
    adapters_fit_keeping: int  # adapters that fit while keeping room for `keep_requests` requests
    keep_requests: int


def max_requests(pool_bytes: float, kv_bytes_per_token: float, block_size: int, context_tokens: int) -> int:
    """Requests of context_tokens whose blocks fit in a pool of pool_bytes."""
    blocks = max(0, int(pool_bytes // (block_size * kv_bytes_per_token)))
    return blocks // blocks_per_request(context_tokens, block_size)


def lora_plan(r: Resolved, rank: int, modules, max_loras: int, context_tokens: int, keep_requests: int = 1) -> LoraPlan:
    """What `max_loras` adapter slots cost in KV pool and concurrency, and how many adapters could fit."""
    tp, dep = r.deployment.tensor_parallel_size, r.deployment
    one = adapter_bytes(r.model, rank, tuple(modules))
    one_gpu = one / tp
    w_gpu = memory.weight_bytes(r.model, r.weights) / tp
    kv_tok = memory.kv_bytes_per_token(r.model, r.kv_bytes, tp)
    base = vllm_pool(r.gpu.usable_memory_bytes, w_gpu, kv_tok, r.model, dep, r.max_model_len)
    pool_without = max(base.kv_pool_bytes, 0.0)
    pool_with = max(pool_without - max_loras * one_gpu, 0.0)
    request_bytes = blocks_per_request(context_tokens, dep.block_size) * dep.block_size * kv_tok
    spare = pool_without - keep_requests * request_bytes
    return LoraPlan(
        rank=rank,
        modules=tuple(modules),
        adapter_bytes=one,
        adapter_bytes_per_gpu=one_gpu,
        max_loras=max_loras,
        slots_bytes_per_gpu=max_loras * one_gpu,
        kv_pool_bytes_without=pool_without,
        kv_pool_bytes_with=pool_with,
        max_requests_without=max_requests(pool_without, kv_tok, dep.block_size, context_tokens),
        max_requests_with=max_requests(pool_with, kv_tok, dep.block_size, context_tokens),
        adapters_fit_in_pool=int(pool_without // one_gpu) if one_gpu else 0,
        adapters_fit_keeping=max(0, int(spare // one_gpu)) if one_gpu else 0,
        keep_requests=keep_requests,
    )


def concurrency_vs_slots(r: Resolved, rank: int, modules, context_tokens: int, slots: list[int]) -> list[dict]:
    """Max requests as the number of GPU adapter slots grows."""
    return [
        {"max_loras": n, "max_requests": lora_plan(r, rank, modules, n, context_tokens).max_requests_with}
        for n in slots
    ]
