"""Each engine's memory rule, applied by the memory plan and shown by `memory --engine` (numbers counted by hand).

Llama-3.1-8B BF16 on one H100-SXM, max_model_len 8,192 (data/gpus.yaml, data/vllm_memory.yaml):
    usable memory       85,029,158,912 B (81,090.125 MiB)
    weights             16,060,522,496 B
    KV per token        131,072 B (32 layers × 8 KV heads × 128 × 2 (K, V) × 2 B)
    non-torch memory    375,809,638 B;  CUDA graphs 504,658,657 B
"""

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from planner.cli import COMMANDS, build_parser
from planner.core.scenario import Scenario, resolve
from planner.memory.plan import plan_memory

USABLE, WEIGHTS, KV_TOKEN = 85_029_158_912, 16_060_522_496, 131_072
NON_TORCH, GRAPHS = 375_809_638, 504_658_657


def memory_json(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "planner", "memory", "--max-model-len", "8192", *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_sglang_pool_is_mem_fraction_static_of_the_gpu_less_weights():
    # server_args.py: chunked_prefill_size 8192 (a GPU of 60-160 GiB), cuda graph max bs 256 (TP < 4):
    # reserved = 512 + 1.5 × 8192 + 1024 × 1/8 + 2 × 256 = 13,440 MiB (above the 10 GiB floor)
    # mem_fraction_static = round((81,090.125 − 13,440) / 81,090.125, 3) = 0.834
    # model_runner: total = what is available after the CUDA context (one GPU: no TP group), 85,029,158,912 −
    # 375,809,638; rest = available after the weights − total × (1 − 0.834) = 0.834 × total − 16,060,522,496
    #                    = 54,540,370,798.5 B
    # tokens = floor(54,540,370,798.5 / 131,072) = 416,110 (page size 1)
    data = memory_json("--engine", "sglang")
    assert data["kv_pool_bytes_per_gpu"] == pytest.approx(0.834 * (USABLE - NON_TORCH) - WEIGHTS)
    assert data["kv_pool_bytes_per_gpu"] == pytest.approx(54_540_370_798.5)
    assert data["kv_cache_tokens"] == 416_110
    assert (data["engine"], data["memory_rule"]) == ("sglang", "sglang-static")
    assert data["vllm_log"] == [] and data["engine_log"]


def test_sglang_pool_with_a_tp_group_matches_a_published_log():
    # vllm-project/vllm#21348: Qwen3-235B-A22B-FP8, --tp 4 --mem-fraction-static 0.93 on 4 x H100 logged "KV Cache is
    # allocated. #tokens: 367404". Planned: 0.93 x (85,029,158,912 - 2,040,109,466 at init with a TP group) -
    # 59,084,573,568 (weights a GPU) = 18,095,242,416.8 B of 48,128 B a token (one KV head a GPU) = 375,981, +2.3%.
    # The vLLM non-torch reserve at TP 4 (0.35 + 3 x 1.79 GiB, taken before the fix) gave 287,789, -21.7%.
    data = memory_json(
        "--engine", "sglang", "--model", "Qwen/Qwen3-235B-A22B-FP8", "--tp", "4", "--mem-fraction-static", "0.93"
    )
    assert data["kv_pool_bytes_per_gpu"] == pytest.approx(0.93 * (USABLE - 2_040_109_466) - 59_084_573_568)
    assert data["kv_cache_tokens"] == 375_981
    assert abs(data["kv_cache_tokens"] / 367_404 - 1) < 0.03


def test_sglang_init_memory_is_read_off_a_published_log():
    # SemiAnalysisAI/InferenceX#2128, DeepSeek-V4-Pro TP 8 on 8 x H200: "Load weight end. ... avail mem=12.25 GB, mem
    # usage=125.65 GB" (SGLang's GB = 2^30 B): 137.90 GiB free before the weights, of the H200's 150,109,945,856 B
    from planner.core.catalog import get_gpu
    from planner.core.engine import get_engine

    h200 = get_gpu("H200").usable_memory_bytes
    assert h200 == 150_109_945_856
    assert get_engine("sglang").tp_init_bytes == pytest.approx(h200 - (12.25 + 125.65) * 2**30, abs=2**20)


def test_tensorrt_llm_pool_is_its_fraction_of_free_memory():
    # max_num_tokens 8192 and max_batch_size 2048 (TensorRT-LLM's defaults) size the activations:
    #   8192 tokens × (3 × 14,336 + 3 × 4,096) × 2 B + min(8192, 2048) × 128,256 vocab × 4 B = 1,956,642,816 B
    # free = 85,029,158,912 − 16,060,522,496 − 1,956,642,816 − 375,809,638 − 504,658,657 = 66,131,525,305 B
    # pool = 0.9 × free = 59,518,372,774.5 B; tokens in blocks of 32: floor(pool / (32 × 131,072)) × 32 = 454,080
    data = memory_json("--engine", "tensorrt-llm")
    free = USABLE - WEIGHTS - 1_956_642_816 - NON_TORCH - GRAPHS
    assert free == 66_131_525_305
    assert data["kv_pool_bytes_per_gpu"] == pytest.approx(0.9 * free)
    assert data["kv_cache_tokens"] == 14_190 * 32 == 454_080
    assert data["memory_rule"] == "trtllm-free-fraction"


def test_llama_cpp_concurrency_is_its_slots():
    # -np 4 slots of 8,192 tokens: n_ctx = 32,768 cells allocated at start (4 GiB of KV), no paging
    data = memory_json("--engine", "llama.cpp", "--max-num-seqs", "4")
    assert data["max_concurrency"] == 4 == data["slots"] == data["paged_max_requests"]
    assert data["kv_cache_tokens"] == 32_768
    assert data["kv_pool_bytes_per_gpu"] == 32_768 * KV_TOKEN
    one = memory_json("--engine", "llama.cpp")  # llama.cpp's default: one slot (-np 1)
    assert one["max_concurrency"] == 1 == one["slots"]


def test_vllm_pool_unchanged():
    data = memory_json()
    assert (data["engine"], data["memory_rule"]) == ("vllm", "vllm-profiler")
    assert data["kv_cache_tokens"] == 443_664 and data["vllm_log"][0] == "GPU KV cache size: 443,664 tokens"


def test_fits_comes_from_the_blockers():
    big = plan_memory(resolve(Scenario(model="meta-llama/Llama-3.1-70B", gpu="H100-SXM")))
    assert [b.kind for b in big.blockers] == ["weights_exceed_budget"] and not big.fits
    assert big.warnings[0] == big.blockers[0].message
    # llama.cpp: 8 slots of 131,072 tokens = 128 GiB of KV cells do not fit beside the weights
    slots = plan_memory(resolve(Scenario(engine="llama.cpp", deployment={"max_num_seqs": 8})))
    assert [b.kind for b in slots.blockers] == ["context_exceeds_memory"] and slots.max_concurrency == 0
    warned = plan_memory(resolve(Scenario(context_tokens=200_000, deployment={"max_model_len": 8192})))
    assert warned.fits and not warned.blockers and warned.warnings  # a warning alone does not block


def test_every_scenario_subcommand_takes_engine():
    taking = []
    for name in COMMANDS:
        parser = build_parser([name])
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices[name]
        options = {o for a in sub._actions for o in a.option_strings}
        if "--model" in options:  # a scenario subcommand
            taking.append(name)
            assert "--engine" in options, name
    assert {"memory", "estimate", "simulate", "capacity", "quant", "tp", "spec-decode"} <= set(taking)
