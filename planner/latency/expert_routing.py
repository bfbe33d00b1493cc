"""Expected routing of a batch of tokens over a mixture of experts (uniform routing): distinct experts touched and
rows per touched expert (planner.latency.perf_model prices weight reads and grouped GEMMs with them)."""

from __future__ import annotations

import numpy as np


def expected_experts(num_experts: int, top_k: int, tokens):
    """Distinct experts a batch of routed tokens touches, E × (1 − (1 − k/E)^tokens), for uniform routing."""
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** tokens)


def tokens_per_expert(num_experts: int, top_k: int, tokens):
    """Rows of one touched expert's GEMM under uniform routing: tokens × k / experts touched (1 for one token, k/E
    per token for a large batch). A grouped GEMM runs one tile of rows per expert, so its efficiency follows these
    rows, not the batch's: DeepSeek-V3 (256 experts, top 8) prefilling 1,024 tokens gives each expert 32 rows, where a
    dense layer's GEMM has 1,024 (the M-tile occupancy behind fused-MoE kernels' per-expert block sizes: vLLM
    fused_moe get_default_config picks BLOCK_SIZE_M 16-64 by tokens per expert)."""
    return tokens * top_k / np.maximum(expected_experts(num_experts, top_k, tokens), 1e-12)
