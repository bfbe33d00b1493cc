"""vLLM's hybrid pool on one GPU (one DP rank) for requests of a context: blocks per request, its "Maximum
concurrency", and whether the state or the KV pages fill it first (planner.memory.layer_groups module note)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.model_spec import ModelSpec
from planner.memory.layer_groups import HybridPool, hybrid_pool


@dataclass(frozen=True)
class HybridFit:
    """vLLM's hybrid pool on one GPU (one DP rank) for requests of `context_tokens`."""

    pool: HybridPool
    blocks_per_request: int  # at context_tokens
    blocks_per_max_request: int  # at max_model_len (the "Maximum concurrency" figure)
    state_blocks_per_request: int
    max_concurrency: float  # vLLM's logged figure: num_blocks / blocks of a max_model_len request
    paged_max_requests: int  # requests of context_tokens the pool holds

    @property
    def pool_limit(self) -> str:
        """What fills the pool first per request: the recurrent-state pages or the KV pages."""
        state = self.state_blocks_per_request
        return "state_slots" if state and state >= self.blocks_per_request - state else "kv_tokens"


def hybrid_fit(
    model: ModelSpec,
    kv_bytes: float,
    pool_bytes: float,
    tp: int,
    block_size: int,
    context_tokens: int,
    max_num_batched_tokens: int,
    max_model_len: int,
    prefix_caching: bool = False,
) -> HybridFit:
    """The pool at a context; prefix caching keeps a second, block-aligned state page per request (vLLM "align")."""
    pool = hybrid_pool(model, kv_bytes, max(pool_bytes, 0.0), tp, block_size, 2 if prefix_caching else 1)
    per_ctx = pool.blocks_per_request(context_tokens, max_num_batched_tokens, max_model_len)
    per_max = pool.blocks_per_request(max_model_len, max_num_batched_tokens, max_model_len)
    return HybridFit(
        pool=pool,
        blocks_per_request=per_ctx,
        blocks_per_max_request=per_max,
        state_blocks_per_request=pool.state_blocks_per_request(),
        max_concurrency=pool.num_blocks / per_max,
        paged_max_requests=pool.num_blocks // per_ctx,
    )
