"""Frontier presets and memory per GPU under TP, PP, DP attention and EP (issue 17, part 1)."""

from __future__ import annotations

import argparse
import json

import pytest

from planner.cli import main
from planner.cli.scenario_args import add_scenario_args, scenario_from_args
from planner.core.catalog import get_model
from planner.core.errors import InputError
from planner.core.params import count_params
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.memory import sizes as memory
from planner.memory.plan import plan_memory


def _plan(model: str, gpu: str = "H200", **dep):
    d = Deployment(**{"weights": "fp8", "max_model_len": 32768, **dep})
    return plan_memory(resolve(Scenario(model=model, gpu=gpu, deployment=d)))


def test_deepseek_v3_parameters_match_the_published_671b_and_37b():
    # Published: 671B total / 37B activated (arXiv 2412.19437 abstract; DeepSeek-V3 README model table), and
    # README_WEIGHTS.md: "Activation parameters: 36.7B (including 0.9B for Embedding and 0.9B for the output Head)".
    # "671B" is rounded to the billion: ±0.5B. For the activated count the two published figures (37B, 36.7B) differ
    # by 0.3B, so we allow 37B ± 0.6B (our count: 8 routed + 1 shared expert, router and both vocab matrices).
    pc = count_params(get_model("deepseek-ai/DeepSeek-V3"))
    assert abs(pc.total - 671e9) <= 0.5e9
    assert abs(pc.active - 37e9) <= 0.6e9
    assert pc.breakdown["experts_routed"] == 58 * 256 * 3 * 7168 * 2048  # 58 MoE layers (61 − 3 dense)


def test_qwen3_235b_parameters_match_the_published_235b_and_22b():
    pc = count_params(get_model("Qwen/Qwen3-235B-A22B"))  # model card: 235B total, 22B activated
    assert abs(pc.total - 235e9) <= 0.5e9
    assert abs(pc.active - 22e9) <= 0.5e9


def test_mla_kv_bytes_per_token_is_61_x_576_x_2():
    m = get_model("deepseek-ai/DeepSeek-V3")
    assert memory.kv_bytes_per_token(m, 2) == 61 * (512 + 64) * 2 == 70_272
    assert memory.kv_bytes_per_token(m, 2, tp=8) == 70_272  # the latent is whole on every TP rank


def test_deepseek_v3_preset_defaults_to_its_fp8_checkpoint():
    assert get_model("deepseek-ai/DeepSeek-V3").quantized_weights == "fp8"  # quantization_config quant_method fp8
    assert get_model("Qwen/Qwen3-235B-A22B").quantized_weights is None


def test_tp8_against_dp8_ep8_concurrency_on_8_h200(capsys):
    # H200: usable 150,109,945,856 B; budget = 0.9 × usable = 135.10 GB. FP8 weights: layers (attention, dense MLP,
    # shared experts, router, norms) 15.264 GB, routed experts 653.909 GB, vocabulary (BF16) 3.707 GB.
    # A block = 16 tokens × 70,272 B = 1,124,352 B; one 32,768-token request = 2,048 blocks.
    # TP 8: weights/GPU = (15.264 + 653.909 + 3.707) / 8 = 84.110 GB; activations 0.983 GB (vLLM's profile run at
    #       the H200 defaults 8,192 tokens / 1,024 sequences), CUDA graphs 0.505 GB, non-torch 0.35 GiB + 7 NVLink
    #       peers × 1.79 GiB (data/vllm_memory.yaml) = 13.830 GB
    #       -> pool 35.672 GB -> 31,726 blocks -> 15 requests; every GPU holds the same latent: 15 in total.
    tp8 = _plan("deepseek-ai/DeepSeek-V3", num_gpus=8, tensor_parallel_size=8)
    assert tp8.weight_bytes_per_gpu == pytest.approx((15.264275456e9 + 653.908770816e9 + 3.70671616e9) / 8)
    assert tp8.num_gpu_blocks == 31_726
    assert tp8.deployment_max_concurrency == 31_726 // 2048 == 15
    # DP 8 + EP 8: attention replicated, experts split 8 ways: 15.264 + 3.707 + 653.909 / 8 = 100.710 GB;
    #       activations 1.687 GB + non-torch 0.376 GB + CUDA graphs 0.505 GB -> pool 31.822 GB -> 28,302 blocks
    #       -> 13 requests per GPU, × 8 ranks
    dp8 = _plan("deepseek-ai/DeepSeek-V3", num_gpus=8, data_parallel_size=8, enable_expert_parallel=True)
    assert dp8.weight_bytes_per_gpu == pytest.approx(15.264275456e9 + 3.70671616e9 + 653.908770816e9 / 8)
    assert dp8.num_gpu_blocks == 28_302
    assert dp8.expert_parallel_size == 8
    assert dp8.deployment_max_concurrency == 8 * (28_302 // 2048) == 104
    assert (
        main(
            [
                "memory",
                "--model",
                "deepseek-ai/DeepSeek-V3",
                "--gpu",
                "H200",
                "--dp",
                "8",
                "--ep",
                "8",
                "--max-model-len",
                "32768",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["deployment_max_concurrency"] == 104 and out["weights"] == "fp8"


def test_gqa_kv_splits_over_tp_and_pipeline_stages_split_layers():
    # Llama-3.1-70B, 80 layers, 8 KV heads: KV/token/GPU = 80 × 2 × 8/TP × 128 × 2 B; PP 2 keeps 40 layers per stage
    one = _plan("meta-llama/Llama-3.1-70B", num_gpus=4, tensor_parallel_size=4, weights="bf16")
    pp2 = _plan(
        "meta-llama/Llama-3.1-70B", num_gpus=8, tensor_parallel_size=4, pipeline_parallel_size=2, weights="bf16"
    )
    assert one.kv_bytes_per_token_per_gpu == 80 * 2 * 2 * 128 * 2 == 81_920
    assert pp2.kv_bytes_per_token_per_gpu == 40 * 2 * 2 * 128 * 2
    # a stage holds 40 of 80 layers and one of the two 128,256 × 8,192 vocabulary matrices, over TP 4
    layers = one.weight_bytes - 2 * 128_256 * 8192 * 2
    assert pp2.weight_bytes_per_gpu == pytest.approx((layers / 2 + 128_256 * 8192 * 2) / 4)


def test_dense_model_data_parallel_ranks_each_hold_their_requests():
    dp1 = _plan("meta-llama/Llama-3.1-8B", gpu="H100-SXM", num_gpus=1, weights="bf16", max_model_len=8192)
    dp4 = _plan(
        "meta-llama/Llama-3.1-8B", gpu="H100-SXM", num_gpus=4, data_parallel_size=4, weights="bf16", max_model_len=8192
    )
    assert dp4.weight_bytes_per_gpu == dp1.weight_bytes_per_gpu  # nothing to split: full copies
    assert dp4.deployment_max_concurrency == 4 * dp1.deployment_max_concurrency
    assert dp4.num_replicas == 1 and dp4.gpus_per_replica == 4


def test_expert_parallel_size_must_divide_tp_times_dp(capsys):
    # EP may be any divisor of TP × DP (MoE-TP × EP = TP × DP); 3 does not divide 4
    p = argparse.ArgumentParser()
    add_scenario_args(p)
    with pytest.raises(InputError) as err:
        scenario_from_args(p.parse_args(["--tp", "2", "--dp", "2", "--ep", "3"]))
    assert err.value.field == "--ep" and "4" in err.value.message
    assert main(["memory", "--tp", "2", "--pp", "2", "--num-gpus", "6"]) == 2
    assert "--num-gpus" in capsys.readouterr().err
    assert (
        Deployment(
            num_gpus=16, tensor_parallel_size=2, data_parallel_size=4, enable_expert_parallel=True
        ).expert_parallel_size
        == 8
    )


def test_qwen3_235b_tp8_duplicates_its_4_kv_heads_twice():
    # vLLM docs/serving/context_parallel_deployment.md: "For Qwen3-235B-A22B, we have 4 kv-heads. When we deploy it
    # with -tp 8, the KV cache duplication is 2x". Per GPU: 94 layers × 2 × 1 head × 128 × 2 B = 48,128 B at TP 4
    # and still at TP 8 (8 GPUs × 1 head = 4 heads × 2).
    m = get_model("Qwen/Qwen3-235B-A22B")
    assert memory.kv_bytes_per_token(m, 2, tp=4) == memory.kv_bytes_per_token(m, 2, tp=8) == 94 * 2 * 128 * 2
    assert 8 * memory.kv_bytes_per_token(m, 2, tp=8) == 2 * memory.kv_bytes_per_token(m, 2)


def test_parallelism_travels_in_a_shared_link():
    from planner.core.scenario_codec import from_query, to_query

    s = Scenario(
        model="deepseek-ai/DeepSeek-V3",
        gpu="H200",
        deployment=Deployment(
            num_gpus=16,
            tensor_parallel_size=1,
            data_parallel_size=8,
            pipeline_parallel_size=2,
            enable_expert_parallel=True,
            weights="fp8",
        ),
    )
    q = to_query(s)
    assert (q["pp"], q["dp"], q["ep"]) == ("2", "8", "1")
    assert from_query(q) == s
    with pytest.raises(InputError) as err:
        from_query({**q, "ep": "maybe"})
    assert err.value.field == "URL parameter ep"
