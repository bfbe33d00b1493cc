"""The memory plan across TP degrees and across context lengths (the Does it fit? page's tables and the report)."""

from __future__ import annotations

from planner.core.scenario import Resolved
from planner.memory import sizes as memory
from planner.memory.plan import TP_DEGREES, plan_memory
from planner.memory.sliding_window import request_blocks


def tp_options(r: Resolved) -> list[dict]:
    """One row per TP degree: memory per GPU and whether vLLM can start."""
    rows = []
    for tp in TP_DEGREES:
        p = plan_memory(r, tp=tp)
        rows.append(
            {
                "tp": tp,
                "gpus": tp,
                "weights_per_gpu_bytes": p.weight_bytes_per_gpu,
                "kv_pool_per_gpu_bytes": p.kv_pool_bytes_per_gpu,
                "kv_cache_tokens": p.kv_cache_tokens,
                "max_concurrency": p.max_concurrency,
                "textbook_max_requests": p.textbook_max_requests,
                "fits": p.fits,
                "note": "; ".join(p.warnings),
            }
        )
    return rows


def concurrency_vs_context(r: Resolved, contexts: list[int] | None = None) -> list[dict]:
    """Max concurrent requests (textbook, paged pool, contiguous reservation) as the context grows."""
    base = plan_memory(r)
    contexts = (
        contexts
        or [c for c in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072) if c <= r.max_model_len]
        or [r.max_model_len]
    )
    rows = []
    for ctx in contexts:
        req_gpu = memory.kv_bytes_per_request(r.model, r.kv_bytes, ctx, base.tensor_parallel_size)
        dep = r.deployment
        if base.hybrid:  # vLLM's hybrid layout: blocks of every group a request of ctx tokens holds
            h = base.hybrid.pool
            paged = h.num_blocks // h.blocks_per_request(ctx, dep.max_num_batched_tokens, r.max_model_len)
        else:
            paged = base.num_gpu_blocks // request_blocks(
                r.model, ctx, dep.max_num_batched_tokens, r.max_model_len, dep.block_size
            )
        rows.append(
            {
                "context_tokens": ctx,
                "textbook": memory.textbook_max_requests(base.gpu_memory_bytes, base.weight_bytes_per_gpu, req_gpu),
                "vllm_paged": paged,
                "contiguous": base.contiguous_max_requests,
            }
        )
    return rows
