"""Roofline model of one forward pass (a prefill chunk, a decode step, or a mix of both) on one TP group.

A step runs every layer once over `new_tokens` tokens of `num_seqs` sequences. Per GPU of the TP group:

    memory    = (weight bytes × (1 + dequant) + KV bytes read and written + activation bytes) / (HBM B/s × mem eff)
    compute   = dense matmul FLOPs / (peak × matmul eff) + expert FLOPs / (peak × matmul eff × MoE eff)
                + attention FLOPs / (16-bit peak × attention eff)
    comm      = 2 × layers all-reduces × (latency × log2 TP + 2 (TP − 1)/TP × new_tokens × hidden × 2 B / link B/s)
    step      = max(memory, compute) + comm + per-step overhead          (the bound is the larger side)

Weight bytes are those a step reads: attention, dense MLP, shared experts, norms and lm_head, plus for a
mixture of experts the expected distinct experts its tokens touch, E × (1 − (1 − k/E)^tokens) (primer §10).
matmul FLOPs = 2 × active parameters per token (lm_head only for each sequence's last token); attention FLOPs =
4 × heads × head dim per query-key pair. Quantized weights read fewer bytes; FP8/INT8 compute runs at its own
peak only where the GPU has it (else weight-only at 16-bit peak with a dequantisation cost). The efficiency
constants come from data/efficiency.yaml (planner.latency.efficiency). Pipeline, data-parallel attention, expert
parallelism and multi-node links are added by planner.latency.parallel (one hook). Left out: kernel-launch
differences between eager and CUDA-graph mode, speculative decoding and prefix-cache hits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from planner.memory import sizes as memory
from planner.latency.efficiency import DEFAULT_ENGINE, EfficiencyProfile, ProfileChoice, choose_profile
from planner.latency.parallel import parallel_terms
from planner.core.params import count_params, mlp_params
from planner.core.scenario import Resolved

ACT_BYTES = 2  # activations and all-reduce payloads run in 16 bits
WEIGHT_ONLY_DEQUANT = 0.1  # FP8/INT8 weights on a GPU without that tensor-core dtype (precisions.yaml: "~0.1")
BREAKDOWN_KEYS = ("weights_read_s", "kv_read_s", "activations_s", "compute_s", "communication_s", "overhead_s")


class StepCost(Protocol):
    """What the serving simulator needs: the wall time of one engine step."""

    def step_time_s(self, new_tokens: int, num_seqs: int, kv_read_tokens: int, attn_pairs: int) -> float: ...


def expected_experts(num_experts: int, top_k: int, tokens):
    """Distinct experts a batch of routed tokens touches, E × (1 − (1 − k/E)^tokens), for uniform routing."""
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** tokens)


def compute_peak_flops(r: Resolved) -> tuple[float, str]:
    """(dense FLOP/s for the weights' compute dtype, dtype used); falls back to 16-bit where the GPU lacks it."""
    for dtype in (r.weights.compute_dtype, "bf16", "fp16"):
        peak = r.gpu.peak_flops(dtype)
        if peak:
            return peak, dtype
    raise ValueError(f"{r.gpu.id} lists no 16-bit FLOP/s")


@dataclass(frozen=True)
class StepBreakdown:
    """One step (or arrays of steps): the parts sum to total_s; `bound` is memory or compute.

    The roofline takes the larger of memory_s and compute_s, so the parts show the winning side only (the other
    side overlaps it); memory_s and compute_s keep both for the roofline chart.
    """

    total_s: np.ndarray | float
    parts: dict[str, np.ndarray | float]  # BREAKDOWN_KEYS
    bound: np.ndarray | str
    memory_s: np.ndarray | float  # all bytes / achieved bandwidth
    compute_s: np.ndarray | float  # all FLOPs / achieved FLOP/s
    bytes_read: np.ndarray | float  # per GPU
    flops: np.ndarray | float  # per GPU


class PerfModel:
    """Step times for a resolved scenario under one engine profile; implements StepCost.

    Built once (constants precomputed), then `step_time_s` is plain float arithmetic for the simulator and
    `step` evaluates numpy arrays of steps with a full breakdown.
    """

    def __init__(self, r: Resolved, engine: str = DEFAULT_ENGINE, profile: EfficiencyProfile | None = None):
        self.resolved = r
        cal = r.calibration
        if profile is None and cal is not None and cal.applies_to(engine, r.gpu.family):
            # the user's own fit (Validation page) replaces the catalogue's constants for its engine and family
            self.choice = ProfileChoice(engine.lower(), r.gpu.family, cal.profile.model_copy(update={
                "status": "calibrated", "note": f"your calibration from {cal.source}"}),
                f"{engine.lower()}/{r.gpu.family} (your calibration)")
        elif profile is None:
            self.choice: ProfileChoice = choose_profile(engine, r.gpu.family)
        else:  # a profile under test (the fit script): no lookup in data/efficiency.yaml
            self.choice = ProfileChoice(engine.lower(), r.gpu.family, profile, f"{engine.lower()}/{r.gpu.family}")
        self.eff = eff = self.choice.profile
        m, tp = r.model, r.deployment.tensor_parallel_size
        self.tp = tp
        pc = count_params(m)
        bpw = r.weights.bytes_per_weight
        emb_bpw = ACT_BYTES if r.weights.keeps_embeddings_16bit else bpw
        lm_head = m.vocab_size * m.hidden_size  # read every step even when tied to the embedding
        moe_layers = (m.num_layers - m.num_dense_layers) if m.is_moe else 0
        expert = moe_layers * mlp_params(m, m.moe_intermediate_size)  # one routed expert, all MoE layers
        body = pc.total - pc.embedding - m.num_experts * expert  # attention, dense MLP, shared experts, norms
        self.num_experts, self.top_k = m.num_experts, m.num_experts_per_tok
        # bytes every step reads per GPU (the input embedding is a gather of a few rows: not counted)
        self.dense_weight_bytes = (body * bpw + lm_head * emb_bpw) / tp
        self.expert_bytes = expert * bpw / tp
        self.flops_per_token = 2.0 * body / tp
        self.expert_flops_per_token = 2.0 * self.top_k * expert / tp  # grouped GEMMs: their own efficiency
        self.flops_per_seq = 2.0 * lm_head / tp  # logits only for each sequence's last position
        width = (m.num_experts_per_tok + m.num_shared_experts) * m.moe_intermediate_size if m.is_moe \
            else m.intermediate_size
        # per token per layer: ~10 hidden-sized and ~4 MLP-width vectors written or read between kernels
        self.act_bytes_per_token = ACT_BYTES * m.num_layers * (10 * m.hidden_size + 4 * width / tp)
        self.act_bytes_per_seq = 2 * 4 * m.vocab_size / tp  # fp32 logits written and read by the sampler
        kv_layer = memory.kv_values_per_token_per_layer(m, tp) * r.kv_bytes
        self.window_layers = m.num_sliding_layers
        self.window = m.sliding_window or 0
        self.kv_bytes_full = kv_layer * (m.num_layers - self.window_layers)  # per token, layers without window
        self.kv_bytes_window = kv_layer * self.window_layers
        heads_per_gpu = m.num_attention_heads / tp
        qk_dim = (m.qk_nope_head_dim + m.qk_rope_head_dim) if m.is_mla else m.head_dim
        v_dim = m.v_head_dim if m.is_mla else m.head_dim
        pair_flops = 2.0 * heads_per_gpu * (qk_dim + v_dim)  # QKᵀ and PV, 2 FLOPs per multiply-add
        self.attn_flops_full = pair_flops * (m.num_layers - self.window_layers)
        self.attn_flops_window = pair_flops * self.window_layers
        peak, self.compute_dtype = compute_peak_flops(r)
        self.dequant = r.weights.dequant_overhead
        if self.compute_dtype != r.weights.compute_dtype and r.weights.compute_dtype in ("fp8", "int8"):
            self.dequant += WEIGHT_ONLY_DEQUANT
        self.peak_flops = peak
        self.attn_peak_flops = r.gpu.peak_flops("bf16") or r.gpu.peak_flops("fp16")
        self.mem_bytes_per_s = r.gpu.hbm_bytes_per_s * eff.memory_efficiency
        self.matmul_flops_per_s = peak * eff.matmul_efficiency
        self.attn_flops_per_s = self.attn_peak_flops * eff.attention_efficiency
        self.expert_flops_per_s = self.matmul_flops_per_s * eff.moe_efficiency
        n_allreduce = 2 * m.num_layers if tp > 1 else 0  # after attention and after the MLP, every layer
        self.comm_fixed_s = n_allreduce * eff.allreduce_latency_s * math.log2(tp) if tp > 1 else 0.0
        self.comm_s_per_token = (n_allreduce * 2 * (tp - 1) / tp * m.hidden_size * ACT_BYTES
                                 / r.gpu.interconnect_bytes_per_s) if tp > 1 else 0.0
        self.overhead_s = eff.step_overhead_s
        # --- issue 17 hook: DP attention, EP all-to-all, PP and multi-node terms live in planner.latency.parallel
        self.parallel = parallel_terms(r, self)

    # -- the simulator's fast path ------------------------------------------------------------------------
    def step_time_s(self, new_tokens: int, num_seqs: int, kv_read_tokens: int, attn_pairs: int) -> float:
        """Wall time of one step (plain floats; same maths as `step`)."""
        w = self.dense_weight_bytes * (1.0 + self.dequant)
        expert_flops = 0.0
        if self.num_experts:
            touched = self.num_experts * (1.0 - (1.0 - self.top_k / self.num_experts) ** new_tokens)
            w += self.expert_bytes * (1.0 + self.dequant) * touched
            w += self.parallel.expert_bytes_delta(new_tokens) * (1.0 + self.dequant)  # issue 17 hook
            expert_flops = self.expert_flops_per_token * new_tokens
        kv_tok, pairs_w = kv_read_tokens, attn_pairs
        if self.window_layers:
            kv_tok = min(kv_read_tokens, num_seqs * self.window)
            pairs_w = min(attn_pairs, new_tokens * self.window)
        mem = (w + self.act_bytes_per_token * new_tokens + self.act_bytes_per_seq * num_seqs
               + self.kv_bytes_full * (kv_read_tokens + new_tokens) + self.kv_bytes_window * (kv_tok + new_tokens)
               ) / self.mem_bytes_per_s
        cmp = ((self.flops_per_token * new_tokens + self.flops_per_seq * num_seqs) / self.matmul_flops_per_s
               + expert_flops / self.expert_flops_per_s
               + (self.attn_flops_full * attn_pairs + self.attn_flops_window * pairs_w) / self.attn_flops_per_s)
        return ((mem if mem > cmp else cmp) + self.comm_fixed_s + self.comm_s_per_token * new_tokens + self.overhead_s
                + self.parallel.extra_s(new_tokens))  # issue 17 hook

    # -- vectorised, with the breakdown -------------------------------------------------------------------
    def step(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs) -> StepBreakdown:
        """Step times and their breakdown for arrays (or scalars) of steps, broadcast together."""
        n, s, kv, pairs = np.broadcast_arrays(*(np.asarray(x, dtype=float)
                                                for x in (new_tokens, num_seqs, kv_read_tokens, attn_pairs)))
        touched = expected_experts(self.num_experts, self.top_k, n) if self.num_experts else 0.0
        w = self.dense_weight_bytes + self.expert_bytes * touched + self.parallel.expert_bytes_delta(n)  # issue 17
        weights_s = w * (1.0 + self.dequant) / self.mem_bytes_per_s  # dequantisation counted with the read
        act_bytes = self.act_bytes_per_token * n + self.act_bytes_per_seq * s
        kv_w = np.minimum(kv, s * self.window) if self.window_layers else kv
        pairs_w = np.minimum(pairs, n * self.window) if self.window_layers else pairs
        kv_bytes = self.kv_bytes_full * (kv + n) + self.kv_bytes_window * (kv_w + n)
        matmul_flops = self.flops_per_token * n + self.flops_per_seq * s
        expert_flops = self.expert_flops_per_token * n
        attn_flops = self.attn_flops_full * pairs + self.attn_flops_window * pairs_w
        memory_s = weights_s + (act_bytes + kv_bytes) / self.mem_bytes_per_s
        compute_s = (matmul_flops / self.matmul_flops_per_s + expert_flops / self.expert_flops_per_s
                     + attn_flops / self.attn_flops_per_s)
        mem_bound = memory_s >= compute_s
        parts = {"weights_read_s": np.where(mem_bound, weights_s, 0.0),
                 "kv_read_s": np.where(mem_bound, kv_bytes / self.mem_bytes_per_s, 0.0),
                 "activations_s": np.where(mem_bound, act_bytes / self.mem_bytes_per_s, 0.0),
                 "compute_s": np.where(mem_bound, 0.0, compute_s),
                 "communication_s": self.comm_fixed_s + self.comm_s_per_token * n
                 + self.parallel.extra_s(n),  # issue 17 hook: planner.latency.parallel
                 "overhead_s": np.full_like(n, self.overhead_s)}
        out = StepBreakdown(total_s=sum(parts.values()), parts=parts, bound=np.where(mem_bound, "memory", "compute"),
                            memory_s=memory_s, compute_s=compute_s, bytes_read=w + act_bytes + kv_bytes,
                            flops=matmul_flops + expert_flops + attn_flops)
        return _scalarise(out) if np.ndim(out.total_s) == 0 else out

    # -- the two phases -----------------------------------------------------------------------------------
    def prefill(self, batch, prompt_tokens, cached_tokens=0) -> StepBreakdown:
        """One pass over `batch` prompts of `prompt_tokens` new tokens each (after `cached_tokens` of prefix)."""
        b, p, c = (np.asarray(x, dtype=float) for x in (batch, prompt_tokens, cached_tokens))
        pairs = b * (p * c + p * (p + 1) / 2)  # causal: new token t attends to c + t keys
        return self.step(b * p, b, b * c, pairs)

    def decode(self, batch, context_tokens) -> StepBreakdown:
        """One decode step: `batch` sequences, each reading `context_tokens` cached tokens and adding one."""
        b, ctx = np.asarray(batch, dtype=float), np.asarray(context_tokens, dtype=float)
        return self.step(b, b, b * ctx, b * (ctx + 1))


def _scalarise(b: StepBreakdown) -> StepBreakdown:
    return StepBreakdown(total_s=float(b.total_s), parts={k: float(v) for k, v in b.parts.items()},
                         bound=str(b.bound), memory_s=float(b.memory_s), compute_s=float(b.compute_s),
                         bytes_read=float(b.bytes_read), flops=float(b.flops))
