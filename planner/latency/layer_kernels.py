"""Kernels one decoder layer runs, by architecture (vLLM's model code): the unit the per-layer fixed cost scales
with, and the kernels of a prompt's forward pass whose host dispatch is exposed (planner.latency.perf_model)."""

from __future__ import annotations

# Kernels one decoder layer runs on the CUDA-graph decode path, counted from vLLM's model code
# (vllm-project/vllm vllm/model_executor/models/llama.py LlamaDecoderLayer, qwen3.py / qwen3_moe.py, deepseek_v2.py
# DeepseekV2MLAAttention and DeepseekV2MoE, layers/fused_moe): the fitted layer_overhead_s is that of a dense
# Llama-type layer; a layer of another architecture costs it in proportion to its kernels (each kernel's launch,
# ramp-up and tail at small batch). Dense Llama layer: 2 fused add+RMSNorm, qkv_proj, rotary, attention, o_proj,
# gate_up_proj, SiLU-and-mul, down_proj = 9.
DENSE_LAYER_KERNELS = 9
ATTENTION_KERNELS = 4  # qkv_proj, rotary embedding, attention, o_proj
QK_NORM_KERNELS = 2  # Qwen3: RMSNorm over q heads and over k heads
# MLA (DeepSeek-V2/V3): q_a_proj, q_a_layernorm, q_b_proj (or one q_proj without a q LoRA), kv_a_proj_with_mqa,
# kv_a_layernorm, rotary, the absorbed W_UK bmm, attention on the latent, the W_UV bmm, o_proj
MLA_KERNELS, MLA_NO_Q_LORA_KERNELS = 10, 8
DENSE_MLP_KERNELS = 3  # gate_up_proj, SiLU-and-mul, down_proj
# routed experts: router gate GEMM, top-k softmax (grouped top-k), token alignment/permutation, the w13 grouped
# GEMM, SiLU-and-mul, the w2 grouped GEMM, the weighted sum over top-k; shared experts add a dense MLP
ROUTED_MOE_KERNELS = 7
# engines whose layers run that kernel sequence: SGLang's model files (python/sglang/srt/models/llama.py,
# qwen3_moe.py, deepseek_v2.py) follow vLLM's, and so does TensorRT-LLM's PyTorch backend (1.x: the `tensorrt-llm`
# profile; tensorrt_llm/_torch/models/modeling_llama.py, modeling_deepseekv3.py, modeling_qwen3_moe.py are PyTorch
# modules of the same structure, the one every aiconfigurator and InferenceMAX row ran). TensorRT-LLM 0.9's engine
# runtime (profile `tensorrt-llm-0.9`: fused plugins for attention with rotary and for MoE with routing and
# permutation) launches other sequences and is not counted (its per-layer constant stands as fitted). Counting
# TensorRT-LLM 1.x (session 23) moved its fitted dense-layer cost 9.8 -> 28 µs: 69 µs a DeepSeek layer (22 kernels)
KERNEL_COUNTED_ENGINES = ("vllm", "sglang", "tensorrt-llm")
# A recurrent mixer's prompt pass, outside its projections' GEMMs: Gated DeltaNet (Qwen3-Next / Qwen3.5, SGLang's and
# vLLM's qwen3_next: causal conv1d, the fused gating, the gated RMSNorm, and flash-linear-attention's chunked rule,
# fla/ops/gated_delta_rule/chunk.py chunk_gated_delta_rule_fwd: l2norm of q and of k, chunk_local_cumsum,
# chunk_scaled_dot_kkt_fwd, solve_tril, recompute_w_u_fwd, chunk_gated_delta_rule_fwd_h, chunk_fwd_o) = 3 + 8;
# Mamba-2 (mamba_chunk_scan_combined: chunk cumsum, chunk state, state passing, bmm chunk, chunk scan; the causal
# conv1d and the gated RMSNorm) = 7. Short kernels over a few chunks of 64 tokens, as an MoE block's are.
RECURRENT_PROMPT_KERNELS = {"linear": 11, "mamba": 7}


def _mla_kernels(m) -> int:
    """Kernels of one latent-attention block (MLA_KERNELS note)."""
    return MLA_KERNELS if m.q_lora_rank else MLA_NO_Q_LORA_KERNELS


def _moe_blocks(m) -> tuple[int, int]:
    """(kernels of one MoE block: routed experts and a shared expert beside them, layers that have one)."""
    moe = ROUTED_MOE_KERNELS + (DENSE_MLP_KERNELS if m.num_shared_experts else 0)
    return moe, (m.num_layers - m.num_dense_layers) if m.is_moe else 0


def layer_kernels(m) -> float:
    """Kernels per decoder layer, averaged over the model's layers (dense MLP layers of an MoE model included)."""
    attn = _mla_kernels(m) if m.is_mla else ATTENTION_KERNELS + (QK_NORM_KERNELS if m.qk_norm else 0)
    moe, moe_layers = _moe_blocks(m)
    mlp = (moe * moe_layers + DENSE_MLP_KERNELS * (m.num_layers - moe_layers)) / m.num_layers
    return 2 + attn + mlp  # + the two fused residual-add RMSNorms


def exposed_dispatch_kernels(m) -> float:
    """Kernels of a prompt's forward pass whose host dispatch delays its first token: the routed experts (and the
    shared expert beside them) of every MoE layer, the latent-attention block of every MLA layer and the short
    kernels of every linear-attention or Mamba-2 mixer (RECURRENT_PROMPT_KERNELS); none of a dense attention layer.

    A prompt pass runs outside CUDA graphs (engines capture graphs for decode batches only), so the host launches its
    kernels one by one, but asynchronously: a launch costs the request time only while the GPU has nothing queued.
    A dense layer's prompt-pass kernels are few and long (GEMMs over the whole prompt), so the GPU stays ahead of
    the host; an MoE block is many short kernels (router, top-k, token permutation, grouped GEMMs at a few tokens
    per expert, weighted sum) and MLA's projections and norms on the latent are short too, so there the host is
    behind. Measured on aiconfigurator's TensorRT-LLM rows measured by InferenceMAX at up to 8 clients (TTFT left
    after the simulated steps): about 20 ms for Llama-3.1-70B (80 dense layers), 30 ms for gpt-oss-120b (36 MoE
    layers), 110-150 ms for DeepSeek-R1 on B200 (58 MoE and 61 MLA layers). Counting every layer's kernels (720,
    468 and 1,321) ranks Llama above gpt-oss; this count (0, 252 and 1,190) ranks them as measured. Status:
    calibrated by the fit (eager_kernel_s), the mechanism a hypothesis not profiled. Counting Qwen3.5's 45 Gated
    DeltaNet layers (600 -> 1,095 kernels; session 29) moved out of sample TTFT one model / GPU / engine out 25.8 /
    24.8 / 23.2 -> 23.8 / 24.2 / 22.0% (validation/accuracy_loo)."""
    moe, moe_layers = _moe_blocks(m)
    recurrent = sum(RECURRENT_PROMPT_KERNELS.get(g.kind, 0) * g.count for g in m.layer_groups)
    return moe * moe_layers + (_mla_kernels(m) * m.num_layers if m.is_mla else 0) + recurrent
