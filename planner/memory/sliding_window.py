"""vLLM V1's one sliding-window rule: the most KV blocks a request holds in a sliding-window layer.

vllm/v1/kv_cache_interface.py @ 001cabc1be16a59a70d720ed61a13b678c060a18, SlidingWindowSpec.max_memory_usage_bytes:
    num_tokens = min(self.sliding_window - 1 + max_num_batched_tokens, max_model_len)
    return (cdiv(num_tokens, self.block_size) + 1) * self.page_size_bytes
("During chunked prefill, we allocate KV cache for the last sliding_window-1 computed tokens plus the newly
scheduled tokens"; +1 because the window may not start at a block boundary.) The same count sizes the
"Maximum concurrency" log line (kv_cache_utils.get_max_concurrency_for_kv_cache_config) and, here, the
simulator's per-request block cap and the paged fit, so a sliding-window model gets one concurrency answer.
"""

from __future__ import annotations

from planner.core.units import ceil_div


def sliding_window_blocks(window: int, max_num_batched_tokens: int, max_model_len: int, block_size: int) -> int:
    """cdiv(min(window − 1 + max_num_batched_tokens, max_model_len), block_size) + 1 blocks."""
    return ceil_div(min(window - 1 + max_num_batched_tokens, max_model_len), block_size) + 1


def window_tokens(window: int, max_num_batched_tokens: int, max_model_len: int, block_size: int) -> int:
    """The same cap in token slots (blocks × block_size), for byte-based formulas."""
    return sliding_window_blocks(window, max_num_batched_tokens, max_model_len, block_size) * block_size


def request_blocks(model, tokens: int, max_num_batched_tokens: int, max_model_len: int, block_size: int) -> int:
    """Blocks (of all layers) a request of `tokens` holds: full-attention layers hold cdiv(tokens, block_size),
    sliding-window layers at most sliding_window_blocks(...) (vLLM's hybrid count, kv_cache_utils
    get_max_concurrency_for_kv_cache_config: the sum over layer groups), averaged over the layers."""
    full = ceil_div(tokens, block_size)
    windowed = model.num_sliding_layers if model.sliding_window else 0
    if not windowed:
        return full
    cap = min(full, sliding_window_blocks(model.sliding_window, max_num_batched_tokens, max_model_len, block_size))
    return ceil_div((model.num_layers - windowed) * full + windowed * cap, model.num_layers)
