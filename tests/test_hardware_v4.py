"""Latency model v4, hardware: the Blackwell, Blackwell Ultra, NVL72, export-variant Hopper and CDNA3/4
parts, the dense FP4 rate and the NVLink domain, and how an FP4 checkpoint runs on parts with and without FP4."""

from __future__ import annotations

import pytest

from planner.core.catalog import get_gpu, gpus, weight_precisions
from planner.core.scenario import Scenario, resolve, with_engine
from planner.core.specs import Deployment
from planner.latency.hardware import compute_peak_flops, fp4_native
from planner.latency.parallel import links_for
from planner.latency.perf_model import PerfModel

NEW_PARTS = ("B300", "GB200", "GB300", "H20", "H800", "MI325X", "MI355X", "RTX-PRO-6000")


def resolved(gpu, weights="bf16", model="meta-llama/Llama-3.1-8B", **dep):
    return resolve(Scenario(model=model, gpu=gpu, deployment=Deployment(weights=weights, **dep)))


def test_every_new_part_is_sourced_and_a_part_with_fp4_cites_it():
    for gid in NEW_PARTS + ("B200",):
        g = get_gpu(gid)
        assert g.sm_count and g.boost_clock_mhz and g.scale_out_bandwidth_gb_s, gid
        assert {"spec", "price", "sm", "usable_memory", "interconnect", "scale_out"} <= set(g.source), gid
    for g in gpus().values():
        assert (g.tflops_fp4 is not None) == ("fp4" in g.source), g.id


def test_fp4_rates_follow_from_the_datasheets():
    # HGX B200: 18 PFLOPS FP4 with sparsity per GPU -> 9,000 dense, twice its FP8 (Blackwell datasheet)
    assert get_gpu("B200").tflops_fp4 == 2 * get_gpu("B200").tflops_fp8 == 9000
    # MI355X: 256 CUs x 8,192 FP8 FLOP/clk (ISSCC 2026) x 2.4 GHz = 5,033 TFLOPS; MXFP4 twice that
    mi355 = get_gpu("MI355X")
    assert mi355.tflops_fp8 == pytest.approx(256 * 8192 * 2.4e9 / 1e12, abs=0.1)
    assert mi355.tflops_fp4 == pytest.approx(256 * 16384 * 2.4e9 / 1e12, abs=0.1)
    # RTX PRO 6000: 188 SMs x 4,096 FP4 FLOP/clk x 2.617 GHz = 2,015 TFLOPS ("4,000 AI TOPS" with sparsity)
    assert get_gpu("RTX-PRO-6000").tflops_fp4 == pytest.approx(188 * 4096 * 2.617e9 / 1e12, abs=0.1)
    # Blackwell Ultra keeps BF16/FP8 and cuts INT8 (aiconfigurator b300_sxm.yaml: 307 TOPS sparse)
    assert get_gpu("B300").tflops_int8 == 153.5 and get_gpu("B300").tflops_fp4 == 14000
    for gid in ("H100-SXM", "H200", "H20", "H800", "MI300X", "MI325X", "A100-80GB"):
        assert get_gpu(gid).tflops_fp4 is None and get_gpu(gid).peak_flops("fp4") is None, gid


def test_export_variants_keep_the_memory_and_lose_compute_or_links():
    h100, h800, h20 = get_gpu("H100-SXM"), get_gpu("H800"), get_gpu("H20")
    assert h800.tflops_bf16 == h100.tflops_bf16 and h800.interconnect_bandwidth_gb_s == 200  # 400 GB/s bidirectional
    assert h20.tflops_bf16 == 148 and h20.hbm_bandwidth_gb_s == 4000 and h20.sm_count == 78
    assert h20.usable_memory_bytes == 97285 * 2**20  # torch total_memory=97285MB


def test_nvl72_is_one_nvlink_domain_of_72_and_other_parts_default_to_their_board():
    assert get_gpu("GB200").nvlink_domain_gpus == get_gpu("GB300").nvlink_domain_gpus == 72
    assert get_gpu("GB200").gpus_per_node == 4
    assert all(g.nvlink_domain_gpus == g.gpus_per_node for g in gpus().values() if not g.id.startswith("GB"))
    # TP=8 spans two GB200 compute trays but stays on NVLink; on 8-GPU HGX boards TP=16 leaves the node
    r = resolved("GB200", model="meta-llama/Llama-3.1-70B", num_gpus=8, tensor_parallel_size=8)
    assert not links_for(r).tp_crosses_nodes and links_for(r).num_nodes == 1
    r = resolved("B200", model="meta-llama/Llama-3.1-70B", num_gpus=16, tensor_parallel_size=16)
    assert links_for(r).tp_crosses_nodes


def test_fp4_precisions_carry_their_block_scales():
    p = weight_precisions()
    assert p["nvfp4"].bits_per_weight == 4 + 8 / 16  # E2M1 + one E4M3 scale per 16
    assert p["mxfp4"].bits_per_weight == 4 + 8 / 32  # E2M1 + one E8M0 scale per 32
    assert p["nvfp4"].compute_dtype == p["mxfp4"].compute_dtype == "fp4"


@pytest.mark.parametrize(
    "gpu, weights, native",
    [
        ("B200", "nvfp4", True),
        ("B200", "mxfp4", True),
        ("GB300", "nvfp4", True),
        ("MI355X", "mxfp4", True),
        ("MI355X", "nvfp4", False),  # CDNA4 multiplies OCP MX formats only
        ("H200", "nvfp4", False),
        ("H200", "mxfp4", False),
    ],
)
def test_fp4_runs_natively_only_where_the_part_has_that_format(gpu, weights, native):
    r = resolved(gpu, weights)
    assert fp4_native(r.gpu, weights) is native
    peak, dtype = compute_peak_flops(r)
    pm = PerfModel(r)
    if native:
        assert dtype == "fp4" and peak == r.gpu.tflops_fp4 * 1e12 and not pm.weight_only
    else:  # weight-only: 16-bit tensor-core math on dequantised weights, like FP8-Marlin on Ampere
        assert dtype == "bf16" and peak == r.gpu.tflops_bf16 * 1e12 and pm.weight_only and pm.dequant > 0


def test_fp4_halves_the_weight_bytes_of_fp8_and_prefill_runs_at_the_fp4_rate():
    fp8, fp4 = PerfModel(resolved("B200", "fp8")), PerfModel(resolved("B200", "nvfp4"))
    assert fp4.dense_weight_bytes < 0.7 * fp8.dense_weight_bytes  # 4.5 of 8 bits (lm_head stays 16-bit in both)
    # no FP4 GEMM sweep is published for the B200: its 16-bit fraction (ml-engineering MAMF 1,745 of 2,250) applies
    assert fp4.peak_flops == pytest.approx(9000e12 * 0.78) and fp8.peak_flops == pytest.approx(4500e12 * 0.76)
    assert fp4.prefill(1, 8192).compute_s < 0.75 * fp8.prefill(1, 8192).compute_s


def test_a_part_without_microbenchmarks_says_estimated():
    for gid in NEW_PARTS:
        pm = PerfModel(resolved(gid))
        assert not pm.hardware.bandwidth_measured and "estimated" in pm.hardware.notes[0], gid


# -- per-layer kernels by architecture ----------------------------------------------------------------------------
def test_layer_kernels_are_counted_by_architecture():
    from planner.core.catalog import get_model
    from planner.latency.layer_kernels import layer_kernels

    assert layer_kernels(get_model("meta-llama/Llama-3.1-8B")) == 9  # 2 norms + qkv, rope, attn, o + gate_up, act, down
    assert layer_kernels(get_model("Qwen/Qwen3-32B")) == 11  # + RMSNorm over q and over k
    assert layer_kernels(get_model("Qwen/Qwen3-235B-A22B")) == 2 + 6 + 7  # routed experts: router .. weighted sum
    # DeepSeek-V3: MLA (10) + shared expert (3) + routed (7) on 58 layers, a dense MLP on the first 3 of 61
    assert layer_kernels(get_model("deepseek-ai/DeepSeek-V3")) == pytest.approx(2 + 10 + (58 * 10 + 3 * 3) / 61)


def test_fixed_cost_per_layer_scales_with_kernels_on_the_pytorch_engines_not_tensorrt_llm_0_9():
    # vLLM, SGLang and TensorRT-LLM 1.x's PyTorch backend run the same module structure: a DeepSeek-V3 layer costs
    # (2 + 10 + 589 / 61) / 9 = 2.39 dense layers; TensorRT-LLM 0.9's engine runtime (fused plugins) one
    r = resolved("H200", "fp8", model="deepseek-ai/DeepSeek-V3", num_gpus=8, tensor_parallel_size=8)
    for engine in ("vllm", "sglang", "tensorrt-llm", "tensorrt-llm-0.9"):
        pm = PerfModel(with_engine(r, engine))
        e = pm.eff
        ratio = (2 + 10 + (58 * 10 + 3 * 3) / 61) / 9 if engine != "tensorrt-llm-0.9" else 1.0
        assert pm.choice.engine == engine
        assert pm.overhead_s == pytest.approx(e.step_overhead_s + 61 * e.layer_overhead_s * ratio), engine


def test_a_prompt_pass_exposes_the_dispatch_of_its_moe_and_mla_blocks_not_of_dense_layers():
    from planner.core.catalog import get_model
    from planner.latency.layer_kernels import exposed_dispatch_kernels, layer_kernels

    # DeepSeek-V3: routed (7) + shared expert (3) on its 58 MoE layers, MLA (10) on all 61: 1,190 of its 1,321
    assert exposed_dispatch_kernels(get_model("deepseek-ai/DeepSeek-V3")) == 58 * (7 + 3) + 61 * 10 == 1190
    assert 61 * layer_kernels(get_model("deepseek-ai/DeepSeek-V3")) == pytest.approx(1321)
    # gpt-oss-120b: routed experts on its 36 layers, no shared expert, GQA attention: 252 (of 36 x 13 = 468)
    assert exposed_dispatch_kernels(get_model("openai/gpt-oss-120b")) == 36 * 7 == 252
    assert exposed_dispatch_kernels(get_model("Qwen/Qwen3-235B-A22B")) == 94 * 7
    # recurrent mixers: Qwen3.5-397B's 45 Gated DeltaNet layers add 11 short prompt-pass kernels each (conv1d, gating,
    # gated norm, flash-linear-attention's 8-kernel chunked rule) to its 60 MoE blocks (routed 7 + shared expert 3);
    # Nemotron-H-56B (dense MLPs) 7 on each of its 54 Mamba-2 layers
    assert exposed_dispatch_kernels(get_model("Qwen/Qwen3.5-397B-A17B")) == 60 * (7 + 3) + 45 * 11 == 1095
    assert exposed_dispatch_kernels(get_model("nvidia/Nemotron-H-56B-Base-8K")) == 54 * 7 == 378
    # dense layers: none, however many (the GPU stays ahead of the host on their long prompt-pass GEMMs)
    assert exposed_dispatch_kernels(get_model("meta-llama/Llama-3.1-70B")) == 0
    assert exposed_dispatch_kernels(get_model("Qwen/Qwen3-32B")) == 0


def test_a_request_pays_its_prompt_pass_host_dispatch_on_its_way_to_the_first_token():
    # engines capture CUDA graphs for decode batches only: a request's prompt pass dispatches its kernels from the
    # host, on its path to the first token (request_path_s, with the frontend's hop), not in the batch's step times.
    # DeepSeek-V3: the MoE and MLA blocks' 58 x 10 + 61 x 10 = 1,190 kernels wait for the host; at 10 µs each 11.9 ms.
    r = resolved("H200", "fp8", model="deepseek-ai/DeepSeek-V3", num_gpus=8, tensor_parallel_size=8)
    kernels = 58 * 10 + 61 * 10
    assert kernels == 1190
    for engine in ("vllm", "sglang", "tensorrt-llm"):
        pm = PerfModel(with_engine(r, engine))
        on = pm.with_profile(pm.eff.model_copy(update={"eager_kernel_s": 1e-5, "frontend_latency_s": 0.02}))
        off = pm.with_profile(pm.eff.model_copy(update={"eager_kernel_s": 0.0, "frontend_latency_s": 0.02}))
        assert on.request_path_s == pytest.approx(0.02 + kernels * 1e-5), engine
        assert off.request_path_s == pytest.approx(0.02), engine
        assert float(on.prefill(1, 1024).total_s) == pytest.approx(float(off.prefill(1, 1024).total_s)), engine
