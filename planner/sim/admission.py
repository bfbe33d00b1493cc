"""Which requests an engine refuses when they arrive (rejected_too_long), before any scheduling.

The common checks are the API server's and the KV pool's; each engine's scheduler adds what it can never admit
(its policy object's `refused`, planner/sim/policies.py).
"""

from __future__ import annotations

import numpy as np


def refused_at_arrival(prompt: np.ndarray, output: np.ndarray, cfg, policy) -> np.ndarray:
    """Requests an engine refuses when they arrive: prompt + output over max_model_len (the API server's check),
    more blocks than the pool (or, with a sliding-window cap, than the cap allows), a prompt over the budget
    without chunked prefill, and what the scheduling policy can never admit."""
    total = prompt + output
    longest = total - 1  # most tokens ever in the KV cache
    blocks = -(-longest // cfg.block_size)
    if cfg.max_blocks_per_request is not None:
        blocks = np.minimum(blocks, cfg.max_blocks_per_request)
    refused = blocks > cfg.num_gpu_blocks
    if cfg.max_model_len is not None:
        refused |= total > cfg.max_model_len
    if not cfg.enable_chunked_prefill:  # the prompt must fit one step (and, where a preempted request recomputes
        # its prompt and output so far, all of it); an engine that never preempts only ever prefills the prompt
        refused |= (longest if policy.may_preempt else prompt) > cfg.max_num_batched_tokens
    return refused | policy.refused(prompt, output)
