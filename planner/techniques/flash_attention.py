"""FlashAttention's memory saving: the attention score matrix with and without tiling (primer §8).

    standard (materialised): scores = batch × heads × L_q × L_kv × bytes per layer, written to HBM, read back for
                             softmax, written again as probabilities and read for P·V (~4 passes over it)
    FlashAttention (tiled):  one block_q × block_kv tile of fp32 scores per thread block, on-chip (SRAM/registers);
                             HBM keeps only one fp32 log-sum-exp per query row: batch × heads × L_q × 4 bytes

Same result (exact attention), computed block by block with an online softmax. Heads are those one GPU holds
(num_attention_heads / TP). Left out: the backward pass (training), and whether a kernel recomputes or stores P.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.core.scenario import Resolved

FP32_BYTES = 4
SCORE_HBM_PASSES = 4  # write S, read S (softmax), write P, read P (P·V)


def score_matrix_bytes(batch: int, heads: int, q_tokens: int, kv_tokens: int, bytes_per_value: float = 2) -> float:
    """batch × heads × L_q × L_kv × bytes: one layer's materialised score matrix."""
    return float(batch) * heads * q_tokens * kv_tokens * bytes_per_value


def score_hbm_traffic_bytes(score_bytes: float) -> float:
    """HBM bytes moved for scores in standard attention: ~4 passes (write S, read S, write P, read P)."""
    return SCORE_HBM_PASSES * score_bytes


def tile_bytes(block_q: int = 128, block_kv: int = 128) -> int:
    """block_q × block_kv fp32 scores: what one thread block keeps on-chip at a time."""
    return block_q * block_kv * FP32_BYTES


def flash_stats_bytes(batch: int, heads: int, q_tokens: int) -> float:
    """batch × heads × L_q × 4 bytes: the fp32 log-sum-exp per query row, all FlashAttention leaves in HBM."""
    return float(batch) * heads * q_tokens * FP32_BYTES


@dataclass(frozen=True)
class AttentionMemory:
    batch: int
    heads: int
    q_tokens: int
    kv_tokens: int
    bytes_per_value: float
    standard_bytes: float
    standard_traffic_bytes: float
    flash_hbm_bytes: float
    flash_tile_bytes: int
    ratio: float  # standard / flash HBM bytes


def attention_memory(
    batch: int,
    heads: int,
    q_tokens: int,
    kv_tokens: int,
    bytes_per_value: float = 2,
    block_q: int = 128,
    block_kv: int = 128,
) -> AttentionMemory:
    """Score-matrix memory per layer without and with tiling."""
    std = score_matrix_bytes(batch, heads, q_tokens, kv_tokens, bytes_per_value)
    flash = flash_stats_bytes(batch, heads, q_tokens)
    return AttentionMemory(
        batch=batch,
        heads=heads,
        q_tokens=q_tokens,
        kv_tokens=kv_tokens,
        bytes_per_value=bytes_per_value,
        standard_bytes=std,
        standard_traffic_bytes=score_hbm_traffic_bytes(std),
        flash_hbm_bytes=flash,
        flash_tile_bytes=tile_bytes(block_q, block_kv),
        ratio=std / flash,
    )


def heads_per_gpu(r: Resolved) -> int:
    """Attention heads on one GPU: heads / TP (tensor parallelism splits the heads)."""
    return r.model.num_attention_heads // r.deployment.tensor_parallel_size


def scenario_attention_memory(r: Resolved, batch: int, seq_len: int, block: int = 128) -> AttentionMemory:
    """Score-matrix memory per layer of a prefill of `batch` × `seq_len` tokens on one GPU of the scenario."""
    return attention_memory(batch, heads_per_gpu(r), seq_len, seq_len, r.kv_bytes, block, block)


def sweep_lengths(batch: int, heads: int, lengths: list[int], bytes_per_value: float = 2) -> list[dict]:
    """Prefill (L_q = L_kv = L) score memory per layer, standard and tiled, for each length."""
    return [
        {
            "tokens": n,
            "standard_bytes": score_matrix_bytes(batch, heads, n, n, bytes_per_value),
            "flash_bytes": flash_stats_bytes(batch, heads, n),
        }
        for n in lengths
    ]
