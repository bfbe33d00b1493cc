"""Admission rules of engines other than vLLM V1: how many KV blocks a request reserves when it starts.

- guaranteed-no-evict (TensorRT-LLM's default CapacitySchedulerPolicy; https://nvidia.github.io/TensorRT-LLM/
  performance/performance-tuning-guide/useful-runtime-flags.html): a request starts only when its prompt + max
  output tokens fit beside the reservations of the running requests, so a started request is never paused.
- static-slots (llama.cpp server, tools/server/server.cpp `n_ctx_slot = n_ctx / params.n_parallel`): the pool is
  split into max_num_seqs slots of pool / max_num_seqs tokens; a request longer than a slot is refused, a free
  slot is all a request needs to start, nothing is paged or preempted.
- sglang (python/sglang/srt/managers/schedule_policy.py PrefillAdder): a new
  request needs prompt + min(max_new, 4096) tokens; running requests hold back min(remaining, 4096) ×
  new_token_ratio; the ratio starts at 0.7 and decays linearly to 0.7 × 0.14 over 600 decode steps (reset when
  idle); when decode runs out of memory, requests are retracted and the ratio is raised to
  min(1, (decoded + 20 × running) / (max_new total + 1)).
The output length the simulator knows for a request plays the role of max_tokens (max_new_tokens).
"""

from __future__ import annotations

import numpy as np

from planner.core.units import ceil_div

SGLANG_CLIP_MAX_NEW_TOKENS = 4096
SGLANG_INIT_NEW_TOKEN_RATIO = 0.7
SGLANG_MIN_NEW_TOKEN_RATIO = 0.7 * 0.14
SGLANG_DECAY_STEPS = 600
SGLANG_RETRACT_DECODE_STEPS = 20
RESERVING = ("guaranteed-no-evict", "static-slots")


def reservation_blocks(policy: str, prompt: int, output: int, block_size: int, num_blocks: int, num_slots: int) -> int:
    """Blocks a request reserves from admission to finish under a reserving policy (0 for the others)."""
    if policy == "guaranteed-no-evict":
        return ceil_div(prompt + output, block_size)
    if policy == "static-slots":
        return num_blocks // num_slots
    return 0


def slot_tokens(num_blocks: int, block_size: int, num_slots: int) -> int:
    """Tokens one llama.cpp slot holds (static-slots): the pool split evenly."""
    return num_blocks // num_slots * block_size


class SGLangRatio:
    """SGLang's new_token_ratio: how much of the running requests' remaining output is held back."""

    def __init__(self):
        self.value = SGLANG_INIT_NEW_TOKEN_RATIO

    def decay(self) -> None:
        step = (SGLANG_INIT_NEW_TOKEN_RATIO - SGLANG_MIN_NEW_TOKEN_RATIO) / SGLANG_DECAY_STEPS
        self.value = max(SGLANG_MIN_NEW_TOKEN_RATIO, self.value - step)

    def reset(self) -> None:
        self.value = SGLANG_INIT_NEW_TOKEN_RATIO

    def after_retract(self, decoded_tokens: int, max_new_tokens: int, num_running: int) -> None:
        self.value = min(1.0, (decoded_tokens + SGLANG_RETRACT_DECODE_STEPS * num_running) / (max_new_tokens + 1))


def refused_at_arrival(prompt: np.ndarray, output: np.ndarray, cfg) -> np.ndarray:
    """Requests an engine refuses when they arrive (rejected_too_long): prompt + output over max_model_len (the
    API server's check), more blocks than the pool (or, with a sliding-window cap, than the cap allows), a prompt
    over the budget without chunked prefill, and what the admission policy can never admit."""
    total = prompt + output
    longest = total - 1  # most tokens ever in the KV cache
    blocks = -(-longest // cfg.block_size)
    if cfg.max_blocks_per_request is not None:
        blocks = np.minimum(blocks, cfg.max_blocks_per_request)
    refused = blocks > cfg.num_gpu_blocks
    if cfg.max_model_len is not None:
        refused |= total > cfg.max_model_len
    if not cfg.enable_chunked_prefill:
        refused |= longest > cfg.max_num_batched_tokens
    if cfg.admission_policy == "guaranteed-no-evict":
        refused |= -(-total // cfg.block_size) > cfg.num_gpu_blocks
    elif cfg.admission_policy == "static-slots":
        refused |= total > slot_tokens(cfg.num_gpu_blocks, cfg.block_size, cfg.max_num_seqs)
    elif cfg.admission_policy == "sglang":  # prompt + clipped max_new must be below the whole pool
        refused |= prompt + np.minimum(output, SGLANG_CLIP_MAX_NEW_TOKENS) >= cfg.num_gpu_blocks * cfg.block_size
    return refused
