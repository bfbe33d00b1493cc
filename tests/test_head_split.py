"""Heads over attention TP as the engines split them (planner/core/head_split.py): what each refuses, in its words,
and what a rank holds when TP exceeds the KV heads."""

from __future__ import annotations

import pytest

from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.memory.plan import plan_memory


def _resolve(model: str, engine: str, gpu: str = "H200", **dep):
    d = Deployment(**{"weights": "fp8", "max_model_len": 8192, **dep})
    return resolve(Scenario(model=model, gpu=gpu, engine=engine, deployment=d))


@pytest.mark.parametrize(
    "engine, words",
    [
        ("vllm", "Total number of attention heads (128) must be divisible by tensor parallel size (36)"),
        ("sglang", "SGLang asserts num_heads % attn_tp_size == 0: 128 heads over attention TP 36"),
        ("tensorrt-llm", "TensorRT-LLM asserts num_heads % tp_size == 0: 128 heads over tensor_parallel_size 36"),
    ],
)
def test_deepseek_attention_tp_36_is_refused_by_every_engine_in_its_words(engine, words):
    # DeepSeek-V3: 128 query heads; 128 / 36 is not whole (aiconfigurator's GB200 TP 36 decode rows)
    with pytest.raises(InputError) as err:
        _resolve("deepseek-ai/DeepSeek-V3", engine, gpu="GB200", num_gpus=36, tensor_parallel_size=36)
    assert err.value.field == "tensor_parallel_size"
    assert words in err.value.message


def test_the_same_36_gpus_as_attention_dp_start_and_hold_the_whole_latent():
    # TensorRT-LLM's tensor_parallel_size 36 + enable_attention_dp = attention TP 1 × DP 36: every rank keeps all
    # 128 heads and the whole MLA latent, 61 layers × 576 values × 1 byte (FP8 KV) = 35,136 bytes per token.
    r = _resolve(
        "deepseek-ai/DeepSeek-V3",
        "tensorrt-llm",
        gpu="GB200",
        num_gpus=36,
        tensor_parallel_size=1,
        data_parallel_size=36,
        kv_cache_dtype="fp8",
    )
    assert plan_memory(r).kv_bytes_per_token_per_gpu == 61 * 576 * 1 == 35_136


def test_kv_heads_replicate_past_tp_and_are_refused_when_neither_divides():
    # Qwen3-14B: 40 query heads, 8 KV heads, 40 layers, head dim 128.
    # TP 8: 1 KV head per rank; TP 20 > 8 KV heads and 8 does not divide 20: every engine's divide/duplicate refuses.
    m = "Qwen/Qwen3-14B"
    tp8 = plan_memory(_resolve(m, "vllm", num_gpus=8, tensor_parallel_size=8, weights="bf16"))
    assert tp8.kv_bytes_per_token_per_gpu == 40 * 2 * 1 * 128 * 2 == 20_480  # layers × K,V × heads × dim × bytes
    with pytest.raises(InputError) as err:
        _resolve(m, "tensorrt-llm", num_gpus=20, tensor_parallel_size=20, weights="bf16")
    assert err.value.field == "tensor_parallel_size" and "20 is not divisible by 8" in err.value.message


def test_tp_above_kv_heads_holds_one_replicated_head():
    # Llama-3.1-70B: 64 query heads, 8 KV heads, 80 layers. TP 16 (two nodes): each KV head on 2 ranks, one per rank:
    # 80 × 2 × 1 × 128 × 2 B = 40,960 B per token per GPU, the same as TP 8 (the replication costs the other half).
    m = "meta-llama/Llama-3.1-70B"
    tp16 = plan_memory(_resolve(m, "sglang", num_gpus=16, tensor_parallel_size=16, weights="bf16"))
    tp8 = plan_memory(_resolve(m, "sglang", num_gpus=8, tensor_parallel_size=8, weights="bf16"))
    assert tp16.kv_bytes_per_token_per_gpu == tp8.kv_bytes_per_token_per_gpu == 80 * 2 * 1 * 128 * 2 == 40_960


def test_a_given_xpyd_layout_names_the_role_flag(capsys):
    # aiconfigurator's GB200 TensorRT-LLM decode at TP 36: refused with TensorRT-LLM's words, naming --decode-tp
    from planner.cli import main

    argv = ["disagg", "--model", "deepseek-ai/DeepSeek-V3", "--gpu", "GB200", "--engine", "tensorrt-llm"]
    argv += ["--max-model-len", "4096", "--target-rate", "1", "--prefill-instances", "1", "--prefill-tp", "4"]
    argv += ["--decode-instances", "1", "--decode-tp", "36"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --decode-tp: TensorRT-LLM asserts num_heads % tp_size == 0") and err.count("\n") == 1
