"""Wide expert parallelism as SGLang deploys DeepSeek-V3 (LMSYS, "Deploying DeepSeek with PD Disaggregation and
Large-scale Expert Parallelism on 96 H100 GPUs", 2025-05-05, lm-sys/lm-sys.github.io@2db4e404
blog/2025-05-05-large-scale-ep.md): DeepEP's all-to-all kernels, two-batch overlap and EPLB's redundant experts.

All-to-all (--moe-a2a-backend deepep): DeepEP's normal kernels for prefill steps, its low-latency kernels for decode
    steps (--deepep-mode auto picks by the step: new tokens > sequences is a prefill); times per MoE layer in
    planner.latency.collectives (deepep_normal_s, deepep_low_latency_s), from DeepEP's published kernel figures.
Two-batch overlap (--enable-two-batch-overlap, TBO): the step runs as two micro-batches of half the tokens, and one
    micro-batch's dispatch runs while the other computes its attention, its combine while the other runs its experts
    (SGLang python/sglang/srt/batch_overlap/operations_strategy.py @dec8155f, _compute_moe_deepseek_blog_prefill /
    _decode: yields after dispatch_a and combine_a). Per micro-batch i of the two:
        step = Σ_i [ max(attention side_i, dispatch_i) + max(expert side_i, combine_i) ]
    attention side = the micro-batch's own step (PerfModel at n/2: its weights, KV, compute, all-reduce, fixed
    costs; paid twice) minus its expert GEMMs; expert side = the expert GEMMs × the busiest rank's load. With the
    normal kernels the GEMMs run on the SMs DeepEP leaves free (SMs / (SMs − 20), collectives.DEEPEP_NORMAL_SMS);
    the low-latency kernels hold no SM in flight. Small decode batches lose (the blog: −27% at 32 tokens per GPU,
    +25.5% at 256): the weights are read twice and each half computes at a smaller size.
EPLB (--enable-eplb, --ep-num-redundant-experts R): E + R expert slots on EP ranks; the R replicas go one by one to the
    expert with the highest load per replica, then the slots are packed heaviest first onto the least loaded rank
    with a free slot (deepseek-ai/EPLB eplb.py replicate_experts, balanced_packing). Without EPLB the experts sit
    contiguously, E / EP per rank (vLLM spreads a remainder over the first ranks). The busiest rank's share × EP is
    the placement imbalance; routing popularity is uniform unless `expert_skew` s gives expert i a weight 1/(i+1)^s.
    On top, the busiest rank's random excess 1 + sqrt(2 ln EP / copies per rank) (planner.latency.parallel).
Left out: the low-latency buffer's cap on tokens per rank (SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK), the
    communication kernels' busy-wait when compute is shorter (the blog's 2× combine), EPLB's rebalancing pauses,
    TBO for dense layers (SGLang runs them unsplit: counted split here, 3 of DeepSeek-V3's 61 layers).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from planner.latency.collectives import (
    DEEPEP_NORMAL_SMS,
    EPGeometry,
    deepep_low_latency_s,
    deepep_normal_s,
)


@lru_cache(maxsize=64)
def busiest_rank_share(num_experts: int, ep: int, skew: float = 0.0, redundant: int = 0, eplb: bool = False) -> float:
    """Share of all routed copies the busiest EP rank receives (module note: contiguous, or EPLB's placement)."""
    weights = 1.0 / np.arange(1, num_experts + 1) ** skew
    weights = weights / weights.sum()
    if not eplb:
        per_rank = [num_experts // ep + (r < num_experts % ep) for r in range(ep)]
        edges = np.cumsum([0] + per_rank)
        return float(max(weights[edges[r] : edges[r + 1]].sum() for r in range(ep)))
    replicas = np.ones(num_experts)
    for _ in range(redundant):  # replicate_experts: the expert with the most load per replica gets one more
        replicas[np.argmax(weights / replicas)] += 1
    loads = np.repeat(weights / replicas, replicas.astype(int))
    slots = -(-len(loads) // ep)
    rank_load, rank_used = np.zeros(ep), np.zeros(ep, dtype=int)
    for load in np.sort(loads)[::-1]:  # balanced_packing: heaviest first onto the lightest rank with room
        open_ranks = np.flatnonzero(rank_used < slots)
        r = open_ranks[np.argmin(rank_load[open_ranks])]
        rank_load[r] += load
        rank_used[r] += 1
    return float(rank_load.max())


def placement_imbalance(num_experts: int, ep: int, skew: float, redundant: int, eplb: bool) -> float:
    """Busiest rank's load over the mean from placement alone: share × EP (1 = balanced)."""
    if ep <= 1 or not num_experts:
        return 1.0
    return busiest_rank_share(num_experts, ep, float(skew), redundant, eplb) * ep


@dataclass(frozen=True)
class WideEP:
    """How one instance runs its MoE layers' communication (module note)."""

    geometry: EPGeometry
    backend: str  # none | deepep
    mode: str  # auto | normal | low_latency
    two_batch_overlap: bool
    moe_layers: int
    sm_count: int

    def _kernel_s(self, kind: str, tokens):
        fn = deepep_normal_s if kind == "normal" else deepep_low_latency_s
        return fn(self.geometry, tokens)

    def layer_s(self, tokens, seqs):
        """(dispatch, combine) seconds of one MoE layer for `tokens` per EP rank (the mode by the step, module note)."""
        if self.mode != "auto":
            return self._kernel_s(self.mode, tokens)
        nd, nc = self._kernel_s("normal", tokens)
        ld, lc = self._kernel_s("low_latency", tokens)
        prefill = np.asarray(tokens) > np.asarray(seqs)
        if np.ndim(prefill) == 0:
            return (nd, nc) if prefill else (ld, lc)
        return np.where(prefill, nd, ld), np.where(prefill, nc, lc)

    def all_to_all_s(self, tokens, seqs):
        """Dispatch + combine over all MoE layers, run one after the other (no overlap)."""
        d, c = self.layer_s(tokens, seqs)
        return self.moe_layers * (d + c)

    def gemm_slowdown(self, tokens, seqs):
        """Under TBO with normal kernels the GEMMs share the GPU with DeepEP's SMs: SMs / (SMs − 20); else 1."""
        if not self.two_batch_overlap or not self.sm_count:
            return 1.0
        f = self.sm_count / (self.sm_count - DEEPEP_NORMAL_SMS)
        if self.mode == "normal":
            return f
        if self.mode == "low_latency":
            return 1.0
        prefill = np.asarray(tokens) > np.asarray(seqs)
        return np.where(prefill, f, 1.0) if np.ndim(prefill) else (f if prefill else 1.0)


def two_batch_step_s(half_step_s, half_expert_s, wide: WideEP, tokens_per_rank, seqs):
    """One step under two-batch overlap (module note) from one micro-batch's own step (`half_step_s`: PerfModel at
    half the tokens, no EP terms) and its expert GEMMs on the busiest rank (`half_expert_s`), both in seconds."""
    d, c = wide.layer_s(tokens_per_rank / 2, seqs / 2)
    slow = wide.gemm_slowdown(tokens_per_rank, seqs)
    attention_side = (half_step_s - half_expert_s) * slow
    expert_side = half_expert_s * slow
    mx = np.maximum if isinstance(attention_side, np.ndarray) else max
    return 2 * (mx(attention_side, wide.moe_layers * d) + mx(expert_side, wide.moe_layers * c))
