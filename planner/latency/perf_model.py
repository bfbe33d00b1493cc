"""Roofline model of one forward pass (a prefill chunk, a decode step, or a mix of both) on one TP group: the ONE
step-time formula of the planner (the simulator, the metrics and the fits all call it; `step` is vectorised over
arrays of steps, `step_time_s` is the same expression on plain floats).

A step runs every layer once over `new_tokens` (n) tokens of `num_seqs` (s) sequences. What the part reaches comes
first: HBM B/s = datasheet × its stream-benchmark fraction, peak = datasheet dense FLOP/s × its large-GEMM fraction
(data/gpus.yaml achieved_*; the vendor median where a part has none: "estimated"), × 35/75 on Hopper for an engine
without wgmma kernels (planner.latency.hardware); an engine that accumulates 16-bit GEMMs in FP16 gets a GeForce
part's FP16-accumulate rate. Then, per GPU of the TP group:

    memory    = weight bytes / min(HBM B/s × e_w, SMs × clock × b × q)
                + (KV bytes read and written + activation bytes) / (HBM B/s × e_max)
                e_w = e_max × w / (w + w_half) × q     w = weight bytes per layer per GPU (small reads reach less of
                peak); q = quant_memory_efficiency for quantized-weight kernels (Marlin GPTQ/AWQ, FP8-Marlin,
                GGUF k-quants), 1 for 16-bit and native FP8/INT8; b = sm_bytes_per_cycle: for an engine whose
                GEMV kernels are issue-bound (engines.yaml issue_bound_gemv: llama.cpp) at most b bytes per SM
                per clock (llama.cpp's ~6.5: an A100's 108 SMs bind below its HBM ceiling, a 4090's 128 SMs at
                2.5 GHz do not); other engines: no such bound
    compute   = matmul FLOPs / (peak × m)  + expert FLOPs / (peak × m × MoE eff) + attention FLOPs / (16-bit peak × a)
                m = m_max × n / (n + n_half) / (1 + dequant)   (small GEMMs reach less of peak; quantized-weight
                kernels dequantise on the tensor-core path: precisions.yaml dequant_overhead); routed experts take
                the same curve at their own rows, t = n × k / experts touched (tokens_per_expert), not at n,
                with n × DP tokens under DP attention (the experts gather every DP rank's tokens); a decode
                step's absorbed-MLA attention runs at FlashMLA's published 660 of the H800's 989.4 BF16 TFLOP/s
                (× the part's 16-bit datasheet) in place of 16-bit peak × a: the fitted a is the prompt pass's
    comm      = 2 × layers × all-reduce(n × hidden × 2 B) with the engine's algorithm and the GPU's link
                (planner.latency.allreduce.allreduce_s: one-shot / two-shot custom all-reduce or an NCCL ring)
    fixed     = per step + layers × (per layer × k + eager launch cost when enforce_eager)
                + s × (per sequence + layers × per sequence-layer) + n × per token
                k = the layer's kernels / a dense Llama layer's 9 (layer_kernels: MoE routing and grouped GEMMs,
                shared experts, MLA projections, Qwen3's q/k norms); per sequence: host and sampling work once a
                step; per sequence-layer: the attention kernel's fixed work for each sequence in every layer, so a
                model of fewer layers (gpt-oss-120b's 36 against Llama-3.1-70B's 80) pays less per sequence
    step      = max(memory, compute) + comm + fixed                    (the bound is the larger side)

A prefill also pays request_overhead_s once per prompt (input processing, KV allocation, sampler set-up); the
simulator adds it to the step that schedules a request's first chunk. Outside the steps, on each request's path to
its first token (`request_path_s`, added to TTFT as the client measures it):

    path      = frontend_latency_s + exposed kernels × eager_kernel_s
                the frontend's hop (HTTP, tokenising, hand-off) and the host dispatch of the request's first forward
                pass: engines capture CUDA graphs for decode batches only (vLLM up to its capture sizes, SGLang's
                decode graphs, TensorRT-LLM's generation-only graphs), so a prompt's pass dispatches every kernel from
                the host; with an overlap scheduler that dispatch runs while the GPU executes the batch's previous
                step, so it delays the new request, not the batch. A count of kernels, not of tokens: on
                aiconfigurator's TensorRT-LLM rows on B200 at 4 clients the TTFT left at zero prompt length (1,024
                vs 8,192 tokens) is ~170 ms for DeepSeek. Only the kernels whose dispatch the GPU waits for count,
                the MoE, MLA and recurrent (Gated DeltaNet, Mamba-2) blocks' (layer_kernels.exposed_dispatch_kernels:
                1,190 for DeepSeek, 1,095 for Qwen3.5-397B, 252 for gpt-oss-120b, none for a dense Llama, whose long
                prompt-pass GEMMs keep the GPU ahead of the host)

Weight bytes are those a step reads: attention, dense MLP, shared experts, norms and lm_head, plus for a
mixture of experts the expected distinct experts its tokens touch, E × (1 − (1 − k/E)^tokens) (primer §10).
matmul FLOPs = 2 × active parameters per token (lm_head only for each sequence's last token); attention FLOPs =
4 × heads × head dim per query-key pair; MLA decode runs with absorbed weights on the latent (per head and pair
2 × (kv_lora_rank + qk_rope_head_dim) + 2 × kv_lora_rank), MLA prefill in expanded form (qk_nope + qk_rope, v).
FP8/INT8 compute runs at its own peak only where the GPU has it (else weight-only at 16-bit peak); NVFP4/MXFP4 at
the part's tflops_fp4 where it has that format (planner.latency.hardware.fp4_native), else weight-only likewise.
The constants come from data/efficiency.yaml (planner.latency.efficiency), the eager cost and all-reduce algorithm from
data/engines.yaml. Pipeline, data-parallel attention, expert parallelism and multi-node links are added by
planner.latency.parallel (one hook); speculative decoding and prefix-cache hits are handled elsewhere.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from planner.core.params import count_params
from planner.core.scenario import Resolved
from planner.latency.allreduce import allreduce_s
from planner.latency.calibration import fitted_profile
from planner.latency.efficiency import EfficiencyProfile, ProfileChoice, choose_profile
from planner.latency.expert_routing import tokens_per_expert
from planner.latency.hardware import compute_peak_flops, hardware_basis
from planner.latency.layer_kernels import (
    DENSE_LAYER_KERNELS,
    KERNEL_COUNTED_ENGINES,
    exposed_dispatch_kernels,
    layer_kernels,
)
from planner.latency.parallel import parallel_terms
from planner.memory import sizes as memory
from planner.memory.layer_groups import kv_bytes_per_token_per_layer, state_bytes_per_request

ACT_BYTES = 2  # activations and all-reduce payloads run in 16 bits
# FlashMLA's decode: "up to 660 TFLOPS in compute-bound configuration on H800 SXM5" (deepseek-ai/FlashMLA README,
# BF16), of the part's 989.4 dense BF16 datasheet TFLOP/s
MLA_DECODE_FRACTION = 660.0 / 989.4
WEIGHT_ONLY_DEQUANT = 0.1  # FP8/INT8 weights on a GPU without that tensor-core dtype (precisions.yaml: "~0.1")
BREAKDOWN_KEYS = ("weights_read_s", "kv_read_s", "activations_s", "compute_s", "communication_s", "overhead_s")


@runtime_checkable
class StepCost(Protocol):
    """What the serving simulator needs: the wall time of one engine step (PerfModel implements it).

    A cost may also offer `step_times_s(...)` taking numpy arrays for `kv_read_tokens` and `attn_pairs` (one entry
    per step); the simulator then advances runs of pure-decode steps in one vectorised call instead of one per step.
    """

    def step_time_s(self, new_tokens: int, num_seqs: int, kv_read_tokens: int, attn_pairs: int) -> float:
        """Seconds for one forward pass. new_tokens: tokens computed (prefill chunks + 1 per decode, or 1 + k
        when verifying drafts); num_seqs: sequences in the pass; kv_read_tokens: sum of context lengths read;
        attn_pairs: sum of new_tokens_i x context_len_i (attention FLOPs are proportional to it)."""
        ...


def _kinds(m, kv_bytes: float, tp: int) -> tuple[float, float, int, int]:
    """(KV bytes per token of the full-attention layers, of the windowed/chunked layers, their layer counts)."""
    full = [g for g in m.layer_groups if g.kind == "full"]
    windowed = [g for g in m.layer_groups if g.kind in ("sliding", "chunked")]
    per = lambda gs: sum(g.count * kv_bytes_per_token_per_layer(g, kv_bytes, tp) for g in gs)  # noqa: E731
    count = lambda gs: sum(g.count for g in gs if not g.shares_layers)  # noqa: E731
    return per(full), per(windowed), count(full), count(windowed)


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

    Built once (constants precomputed); `step` evaluates numpy arrays of steps with a full breakdown and
    `step_time_s` evaluates the same expression (`_terms`) on plain floats for the simulator.
    """

    def __init__(self, r: Resolved, *, profile: EfficiencyProfile | None = None):
        """The scenario's engine (`r.engine`) picks the efficiency profile and the kernel path; `profile` replaces
        the profile (a fit under test)."""
        self.resolved = r
        engine = r.engine.id
        cal = r.calibration
        if profile is None and cal is not None and cal.applies_to(engine, r.gpu.family):
            # the user's own fit (Validation page) replaces the catalogue's constants for its engine and family
            self.choice = ProfileChoice(
                engine.lower(),
                r.gpu.family,
                fitted_profile(cal).model_copy(
                    update={"status": "calibrated", "note": f"your calibration from {cal.source}"}
                ),
                f"{engine.lower()}/{r.gpu.family} (your calibration)",
            )
        elif profile is None:
            self.choice: ProfileChoice = choose_profile(engine, r.gpu.family)
        else:  # a profile under test (the fit script): no lookup in data/efficiency.yaml
            self.choice = ProfileChoice(engine.lower(), r.gpu.family, profile, f"{engine.lower()}/{r.gpu.family}")
        self.eff = eff = self.choice.profile
        m, tp = r.model, r.deployment.tensor_parallel_size
        self.tp, self.num_layers = tp, m.num_layers
        pc = count_params(m)
        bpw = r.weights.bytes_per_weight
        emb_bpw = ACT_BYTES if r.weights.keeps_embeddings_16bit else bpw
        lm_head = m.vocab_size * m.hidden_size  # read every step even when tied to the embedding
        # one routed expert over all MoE layers (interleaved, latent experts: planner.core.params counts them)
        expert = pc.breakdown["experts_routed"] // m.num_experts if m.is_moe else 0
        # attention, dense MLP, shared experts, norms (a text token does not read the vision tower)
        body = pc.total - pc.embedding - m.num_experts * expert - pc.vision
        self.num_experts, self.top_k = m.num_experts, m.num_experts_per_tok
        # bytes every step reads per GPU (the input embedding is a gather of a few rows: not counted)
        self.dense_weight_bytes = (body * bpw + lm_head * emb_bpw) / tp
        self.expert_bytes = expert * bpw / tp
        self.flops_per_token = 2.0 * body / tp
        self.expert_flops_per_token = 2.0 * self.top_k * expert / tp  # grouped GEMMs: their own efficiency
        # DP ranks whose tokens reach this GPU's experts (expert_compute_s; planner.latency.parallel: MoE over TP × DP)
        self.expert_token_ranks = r.deployment.data_parallel_size if m.is_moe else 1
        self.flops_per_seq = 2.0 * lm_head / tp  # logits only for each sequence's last position
        width = (
            (m.num_experts_per_tok + m.num_shared_experts) * m.moe_intermediate_size
            if m.is_moe
            else m.intermediate_size
        )
        # per token per layer: ~10 hidden-sized and ~4 MLP-width vectors written or read between kernels
        self.act_bytes_per_token = ACT_BYTES * m.num_layers * (10 * m.hidden_size + 4 * width / tp)
        self.act_bytes_per_seq = 2 * 4 * m.vocab_size / tp  # fp32 logits written and read by the sampler
        kv_layer = memory.kv_values_per_token_per_layer(m, tp) * r.kv_bytes
        self.window_layers = m.num_sliding_layers
        self.window = m.sliding_window or 0
        self.kv_bytes_full = kv_layer * (m.num_layers - self.window_layers)  # per token, layers without window
        self.kv_bytes_window = kv_layer * self.window_layers
        full_layers = m.num_layers - self.window_layers
        if m.layer_groups:  # layer kinds (planner.memory.layer_groups): only the attention layers cache tokens
            self.kv_bytes_full, self.kv_bytes_window, full_layers, self.window_layers = _kinds(m, r.kv_bytes, tp)
            self.window = max((g.window or 0 for g in m.layer_groups if g.kind in ("sliding", "chunked")), default=0)
            # a linear-attention / Mamba state is read and written back once per step per sequence
            self.act_bytes_per_seq += 2 * state_bytes_per_request(m, tp)
        heads_per_gpu = m.num_attention_heads / tp
        if m.is_mla:  # expanded (prefill) and absorbed-on-the-latent (decode) forms
            pair_prefill = 2.0 * heads_per_gpu * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
            pair_decode = 2.0 * heads_per_gpu * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
        else:
            pair_prefill = pair_decode = 2.0 * heads_per_gpu * 2 * m.head_dim  # QKᵀ and PV, 2 FLOPs per MAC
        self.attn_flops_full, self.attn_flops_window = pair_prefill * full_layers, pair_prefill * self.window_layers
        self.attn_decode_extra = (pair_decode - pair_prefill) / pair_prefill if pair_prefill else 0.0
        eng = r.engine
        _, self.compute_dtype = compute_peak_flops(r)
        self.hardware = hw = hardware_basis(r, self.compute_dtype, eng)
        self.dequant = r.weights.dequant_overhead
        if self.compute_dtype != r.weights.compute_dtype and r.weights.compute_dtype in ("fp8", "int8", "fp4"):
            self.dequant += WEIGHT_ONLY_DEQUANT  # FP4 on a part without that format: dequantised like FP8-Marlin
        # quantized-weight kernels: weight-only formats (fewer than 16 bits stored, 16-bit tensor-core math: Marlin
        # GPTQ/AWQ, FP8-Marlin on Ampere, FP4 on Hopper) and sub-byte GGUF k-quants (int8 dot products on unpacked
        # blocks); native FP4 block-scaled MMA (Blackwell, CDNA4 MXFP4) reads its bytes as a native dtype does
        self.weight_only = (bpw < ACT_BYTES and self.compute_dtype in ("fp16", "bf16")) or (
            bpw < 1.0 and self.compute_dtype != "fp4"
        )
        self.peak_flops = hw.datasheet_flops * hw.matmul_fraction * hw.kernel_fraction  # what the part reaches
        self.attn_peak_flops = (
            (r.gpu.peak_flops("bf16") or r.gpu.peak_flops("fp16")) * hw.attention_fraction * hw.kernel_fraction
        )
        # absorbed-MLA decode (FlashMLA-class kernels: every head's query against the shared latent) runs at a
        # published kernel's fraction of the 16-bit datasheet, not at the prompt pass's fitted attention efficiency
        self.mla_decode_flops_per_s = (
            (r.gpu.peak_flops("bf16") or r.gpu.peak_flops("fp16")) * hw.kernel_fraction * MLA_DECODE_FRACTION
            if m.is_mla
            else 0.0
        )
        self.hbm_bytes_per_s = r.gpu.hbm_bytes_per_s * hw.bandwidth_fraction
        # the SM issue bound applies to engines whose GEMV kernels are latency-bound per SM (data/engines.yaml)
        self.sm_clocks_per_s = r.gpu.sm_clocks_per_s if eng.issue_bound_gemv else None
        self.n_allreduce = 2 * m.num_layers if tp > 1 else 0  # after attention and after the MLP, every layer
        self.allreduce_algorithm = eng.allreduce
        self.link_bytes_per_s, self.interconnect = r.gpu.interconnect_bytes_per_s, r.gpu.interconnect
        self.ar_bytes_per_token = m.hidden_size * ACT_BYTES
        self.eager_layer_s = eng.eager_layer_overhead_s if r.deployment.enforce_eager else 0.0
        counted = self.choice.engine in KERNEL_COUNTED_ENGINES
        self.kernel_ratio = layer_kernels(m) / DENSE_LAYER_KERNELS if counted else 1.0
        # kernels of a prompt's forward pass, dispatched from the host outside CUDA graphs, whose dispatch the GPU
        # waits for: the MoE and MLA blocks' (layer_kernels.exposed_dispatch_kernels; every engine's PyTorch path:
        # TensorRT-LLM's PyTorch backend runs the same module structure)
        self.eager_kernels = exposed_dispatch_kernels(m)
        self._resolved = r
        self._apply(eff)

    def _apply(self, eff: EfficiencyProfile) -> None:
        """The profile-dependent constants (the rest depends on the scenario only)."""
        self.eff = eff
        self.mem_bytes_per_s = self.hbm_bytes_per_s * eff.memory_efficiency  # the ceiling (KV, activations)
        self.weight_mem_factor = eff.quant_memory_efficiency if self.weight_only else 1.0
        self.matmul_flops_per_s = (
            self.peak_flops * eff.matmul_efficiency / (1.0 + (self.dequant if self.weight_only else 0.0))
        )
        self.attn_flops_per_s = self.attn_peak_flops * eff.attention_efficiency
        layer_s = eff.layer_overhead_s * self.kernel_ratio  # per-layer kernels by architecture (layer_kernels)
        self.overhead_s = eff.step_overhead_s + self.num_layers * (layer_s + self.eager_layer_s)
        self.seq_overhead_s = eff.seq_overhead_s + self.num_layers * eff.layer_seq_overhead_s
        self.token_overhead_s = eff.token_overhead_s
        # on a request's path to its first token, outside the steps: the frontend's hop and the host dispatch of its
        # prompt's forward pass (the module docstring's `path`)
        self.request_path_s = eff.frontend_latency_s + eff.eager_kernel_s * self.eager_kernels
        self._comm_cache: dict[float, float] = {}
        # kept for callers of the first model: the all-reduce cost of one token and of an empty step
        self.comm_fixed_s = self.comm_s(0.0)
        self.comm_s_per_token = self.comm_s(1.0) - self.comm_fixed_s
        self.expert_flops_per_s = self.matmul_flops_per_s * eff.moe_efficiency
        # parallel layouts: DP attention, EP all-to-all, PP and multi-node terms live in planner.latency.parallel
        self.parallel = parallel_terms(self._resolved, self)

    def with_profile(self, profile: EfficiencyProfile) -> PerfModel:
        """A copy under another profile of the same engine (the fits' inner loop: no scenario geometry recomputed)."""
        out = copy.copy(self)
        out.choice = dataclasses.replace(self.choice, profile=profile)
        out._apply(profile)
        return out

    def comm_s(self, new_tokens):
        """Tensor-parallel all-reduce time of a step over `new_tokens` tokens (scalar or array)."""
        if not self.n_allreduce:
            return 0.0 * np.asarray(new_tokens, dtype=float) if np.ndim(new_tokens) else 0.0
        return self.n_allreduce * allreduce_s(
            self.allreduce_algorithm,
            self.tp,
            np.asarray(new_tokens, dtype=float) * self.ar_bytes_per_token,
            self.eff.allreduce_latency_s,
            self.link_bytes_per_s,
            self.interconnect,
        )

    def expert_compute_s(self, n):
        """Routed experts' grouped-GEMM seconds of a step over `n` new tokens of this GPU's rank (scalar or array).

        Each touched expert's GEMM has only its own tokens' rows (tokens_per_expert). The MoE layers span TP × DP
        GPUs (planner.latency.parallel), so under DP attention an expert gathers the tokens of all DP ranks: its
        rows are those of DP × n tokens (SGLang wide EP, DP 72: 256 decode tokens per rank give each expert 576 rows,
        not 8), while the FLOPs per GPU stay n × k × expert / TP. Two-batch overlap and the EP imbalance term time
        the experts with this same expression (ParallelTerms), so no step counts them twice."""
        if not self.num_experts:
            return 0.0 * n
        e = self.eff
        flops = self.expert_flops_per_token * n
        if not e.matmul_half_tokens:
            return flops / self.expert_flops_per_s
        te = tokens_per_expert(self.num_experts, self.top_k, n * self.expert_token_ranks)
        return flops / (self.expert_flops_per_s * te / (te + e.matmul_half_tokens))

    def _terms(self, n, s, kv, pairs, mn):
        """The step's terms for floats or numpy arrays (mn = min or np.minimum): the single formula."""
        e = self.eff
        w = self.dense_weight_bytes
        if self.num_experts:
            w = w + self.expert_bytes * self.num_experts * (1.0 - (1.0 - self.top_k / self.num_experts) ** n)
            w = w + self.parallel.expert_bytes_delta(n)  # EP: experts read per step
        w_layer = w / self.num_layers
        e_w = e.memory_efficiency * (w_layer / (w_layer + e.memory_half_bytes)) * self.weight_mem_factor
        weight_rate = self.hbm_bytes_per_s * e_w
        if self.sm_clocks_per_s:  # latency-bound GEMV kernels: SMs x clock x bytes per SM-cycle
            weight_rate = mn(weight_rate, self.sm_clocks_per_s * e.sm_bytes_per_cycle * self.weight_mem_factor)
        weights_s = w / weight_rate
        act_bytes = self.act_bytes_per_token * n + self.act_bytes_per_seq * s
        if self.window_layers:
            kv_w, pairs_w = mn(kv, s * self.window), mn(pairs, n * self.window)
        else:
            kv_w, pairs_w = kv, pairs
        kv_bytes = self.kv_bytes_full * (kv + n) + self.kv_bytes_window * (kv_w + n)
        m_eff = (
            self.matmul_flops_per_s * n / (n + e.matmul_half_tokens)
            if e.matmul_half_tokens
            else self.matmul_flops_per_s
        )
        matmul_flops = self.flops_per_token * n + self.flops_per_seq * s
        expert_flops = self.expert_flops_per_token * n
        decode = n <= s
        attn_flops = (self.attn_flops_full * pairs + self.attn_flops_window * pairs_w) * (
            1.0 + self.attn_decode_extra * decode
        )
        if self.mla_decode_flops_per_s:  # MLA: decode steps at the decode kernel's rate, prompt passes at the fitted
            attn_s = attn_flops * (decode / self.mla_decode_flops_per_s + (1 - decode) / self.attn_flops_per_s)
        else:
            attn_s = attn_flops / self.attn_flops_per_s
        compute_s = matmul_flops / m_eff + self.expert_compute_s(n) + attn_s
        kv_s, act_s = kv_bytes / self.mem_bytes_per_s, act_bytes / self.mem_bytes_per_s
        fixed_s = self.overhead_s + self.seq_overhead_s * s + self.token_overhead_s * n
        return (
            weights_s,
            kv_s,
            act_s,
            compute_s,
            fixed_s,
            w,
            act_bytes,
            kv_bytes,
            matmul_flops + expert_flops + attn_flops,
        )

    # -- the simulator's fast path ------------------------------------------------------------------------
    def step_time_s(self, new_tokens: int, num_seqs: int, kv_read_tokens: int, attn_pairs: int) -> float:
        """Wall time of one step (plain floats; the same `_terms` as `step`)."""
        wt, kv, act, cmp, fixed, *_ = self._terms(
            float(new_tokens), float(num_seqs), float(kv_read_tokens), float(attn_pairs), min
        )
        mem = wt + kv + act
        comm = self._comm_cache.get(new_tokens)
        if comm is None:
            comm = self._comm_cache[new_tokens] = float(self.comm_s(float(new_tokens)))
        ep_terms = self.parallel.extra_s(new_tokens, num_seqs, kv_read_tokens, attn_pairs)  # EP/DP/PP, overlap
        return (mem if mem > cmp else cmp) + comm + fixed + ep_terms

    def total_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs) -> np.ndarray:
        """Step times only, for numpy arrays of steps (the same `_terms` as `step`, without the breakdown: the
        re-pricing inner loop of validation.serving_traces)."""
        n = np.asarray(new_tokens, dtype=float)
        wt, kv, act, cmp, fixed, *_ = self._terms(n, num_seqs, kv_read_tokens, attn_pairs, np.minimum)
        extra = self.parallel.extra_s(n, num_seqs, kv_read_tokens, attn_pairs)  # as `step` (two-batch overlap)
        return np.maximum(wt + kv + act, cmp) + self.comm_s(n) + extra + fixed

    # -- vectorised, with the breakdown -------------------------------------------------------------------
    def step(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs) -> StepBreakdown:
        """Step times and their breakdown for arrays (or scalars) of steps, broadcast together."""
        n, s, kv, pairs = np.broadcast_arrays(
            *(np.asarray(x, dtype=float) for x in (new_tokens, num_seqs, kv_read_tokens, attn_pairs))
        )
        weights_s, kv_s, act_s, compute_s, fixed_s, w, act_bytes, kv_bytes, flops = self._terms(
            n, s, kv, pairs, np.minimum
        )
        memory_s = weights_s + kv_s + act_s
        mem_bound = memory_s >= compute_s
        parts = {
            "weights_read_s": np.where(mem_bound, weights_s, 0.0),
            "kv_read_s": np.where(mem_bound, kv_s, 0.0),
            "activations_s": np.where(mem_bound, act_s, 0.0),
            "compute_s": np.where(mem_bound, 0.0, compute_s),
            "communication_s": np.broadcast_to(self.comm_s(n) + self.parallel.extra_s(n, s, kv, pairs), n.shape) * 1.0,
            "overhead_s": np.broadcast_to(fixed_s, n.shape) * 1.0,
        }
        out = StepBreakdown(
            total_s=sum(parts.values()),
            parts=parts,
            bound=np.where(mem_bound, "memory", "compute"),
            memory_s=memory_s,
            compute_s=compute_s,
            bytes_read=w + act_bytes + kv_bytes,
            flops=flops,
        )
        return _scalarise(out) if np.ndim(out.total_s) == 0 else out

    # -- the two phases -----------------------------------------------------------------------------------
    def prefill(self, batch, prompt_tokens, cached_tokens=0) -> StepBreakdown:
        """One pass over `batch` prompts of `prompt_tokens` new tokens each (after `cached_tokens` of prefix)."""
        b, p, c = (np.asarray(x, dtype=float) for x in (batch, prompt_tokens, cached_tokens))
        pairs = b * (p * c + p * (p + 1) / 2)  # causal: new token t attends to c + t keys
        return with_request_overhead(self.step(b * p, b, b * c, pairs), b * self.request_overhead_s)

    @property
    def request_overhead_s(self) -> float:
        """Paid once per request with its first prefill chunk (the simulator adds it when a request starts)."""
        return self.eff.request_overhead_s

    def decode(self, batch, context_tokens) -> StepBreakdown:
        """One decode step: `batch` sequences, each reading `context_tokens` cached tokens and adding one."""
        b, ctx = np.asarray(batch, dtype=float), np.asarray(context_tokens, dtype=float)
        return self.step(b, b, b * ctx, b * (ctx + 1))


def with_request_overhead(b: StepBreakdown, extra) -> StepBreakdown:
    """`b` with `extra` seconds of per-request cost added to its overhead part and its total."""
    if not np.any(extra):
        return b
    parts = dict(b.parts)
    parts["overhead_s"] = parts["overhead_s"] + extra
    total = b.total_s + extra
    if np.ndim(total) == 0:
        parts = {k: float(v) for k, v in parts.items()}
        total = float(total)
    return dataclasses.replace(b, parts=parts, total_s=total)


def _scalarise(b: StepBreakdown) -> StepBreakdown:
    return StepBreakdown(
        total_s=float(b.total_s),
        parts={k: float(v) for k, v in b.parts.items()},
        bound=str(b.bound),
        memory_s=float(b.memory_s),
        compute_s=float(b.compute_s),
        bytes_read=float(b.bytes_read),
        flops=float(b.flops),
    )
