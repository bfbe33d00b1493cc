"""PagedAttention against contiguous reservation (primer §7), for the user's length distribution.

    contiguous: each request reserves `reserve` tokens up front (older engines: max_model_len)
                max requests = floor(pool tokens / reserve);  waste = 1 − mean(length) / reserve
    paged:      a request holds ceil(length / block) blocks, handed out as it grows
                max requests = floor(pool blocks / mean blocks per request);  waste = the unfilled tail block

Lengths are prompt + output at the end of generation (each request's peak), drawn from the user's
distributions with a seed and capped at max_model_len. Left out: external fragmentation of contiguous
allocators (gaps between reservations, which make contiguous worse still) and prefix sharing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.core.scenario import Resolved
from planner.memory.plan import plan_memory
from planner.traffic.generators import LengthDist, as_length_dist


def sample_lengths(
    prompt: str | LengthDist,
    output: str | LengthDist,
    num: int,
    seed: int,
    max_len: int,
    fields: tuple[str, str] = ("prompt", "output"),
) -> np.ndarray:
    """Prompt + output tokens per request (seeded), capped at max_model_len; `fields` name the inputs in errors."""
    rng = np.random.default_rng(seed)
    p = as_length_dist(prompt, fields[0]).sample(num, rng, "prompt")
    o = as_length_dist(output, fields[1]).sample(num, rng, "output")
    return np.minimum(p + o, max_len)


def paged_blocks(lengths: np.ndarray, block_size: int) -> np.ndarray:
    """ceil(length / block_size) blocks per request."""
    return -(-lengths // block_size)


def contiguous_max_requests(pool_tokens: int, reserve_tokens: int) -> int:
    """floor(pool tokens / reserved tokens per request)."""
    return int(pool_tokens // reserve_tokens)


def paged_max_requests(pool_blocks: int, mean_blocks: float) -> int:
    """floor(pool blocks / mean blocks per request)."""
    return int(pool_blocks // mean_blocks) if mean_blocks > 0 else 0


def contiguous_waste_fraction(lengths: np.ndarray, reserve_tokens: int) -> float:
    """Reserved but never written: 1 − mean(length) / reserve."""
    return 1.0 - float(np.mean(lengths)) / reserve_tokens


def paged_waste_fraction(lengths: np.ndarray, block_size: int) -> float:
    """Only the last block is partly empty: mean(blocks × block − length) / mean(blocks × block)."""
    held = paged_blocks(lengths, block_size) * block_size
    return float(np.mean(held - lengths) / np.mean(held))


@dataclass(frozen=True)
class PagedComparison:
    num_samples: int
    mean_tokens: float
    p50_tokens: float
    p95_tokens: float
    max_tokens: int
    reserve_tokens: int
    block_size: int
    kv_bytes_per_token_per_gpu: float
    pool_tokens: int
    pool_blocks: int
    contiguous_max_requests: int
    paged_max_requests: int
    contiguous_waste_fraction: float
    paged_waste_fraction: float
    contiguous_waste_bytes: float  # at full concurrency, per GPU
    paged_waste_bytes: float

    @property
    def concurrency_gain(self) -> float | None:
        """paged / contiguous requests; None when contiguous reservation fits none (no finite ratio)."""
        return self.paged_max_requests / self.contiguous_max_requests if self.contiguous_max_requests else None


def compare(r: Resolved, lengths: np.ndarray, reserve_tokens: int | None = None) -> PagedComparison:
    """Concurrency and wasted KV memory, paged vs contiguous, for these request lengths."""
    plan = plan_memory(r)
    bs = r.deployment.block_size
    reserve = reserve_tokens or r.max_model_len
    lengths = np.minimum(np.asarray(lengths, dtype=np.int64), reserve)
    mean_blocks = float(np.mean(paged_blocks(lengths, bs)))
    n_contig = contiguous_max_requests(plan.kv_cache_tokens, reserve)
    n_paged = paged_max_requests(plan.num_gpu_blocks, mean_blocks)
    kv_tok = plan.kv_bytes_per_token_per_gpu
    mean_len = float(np.mean(lengths))
    return PagedComparison(
        num_samples=len(lengths),
        mean_tokens=mean_len,
        p50_tokens=float(np.percentile(lengths, 50)),
        p95_tokens=float(np.percentile(lengths, 95)),
        max_tokens=int(np.max(lengths)),
        reserve_tokens=reserve,
        block_size=bs,
        kv_bytes_per_token_per_gpu=kv_tok,
        pool_tokens=plan.kv_cache_tokens,
        pool_blocks=plan.num_gpu_blocks,
        contiguous_max_requests=n_contig,
        paged_max_requests=n_paged,
        contiguous_waste_fraction=contiguous_waste_fraction(lengths, reserve),
        paged_waste_fraction=paged_waste_fraction(lengths, bs),
        contiguous_waste_bytes=n_contig * (reserve - mean_len) * kv_tok,
        paged_waste_bytes=n_paged * (mean_blocks * bs - mean_len) * kv_tok,
    )
