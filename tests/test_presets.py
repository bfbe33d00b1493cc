"""Every shipped preset: parameter counts against published figures, KV bytes per token, parsing quirks."""

from __future__ import annotations

import pytest

from planner.core.catalog import get_model, model_presets
from planner.core.params import count_params
from planner.memory import sizes as memory

# (total, active) parameters. Exact figures: Phi-3-mini from keras-hub phi3_presets.py (3,821,079,552); the rest
# are the derived counts of data/models/SOURCES.md, checked against the published rounded sizes in comments.
PARAMS = {
    "microsoft/Phi-3-mini-4k-instruct": (3_821_079_552, None),  # keras-hub: 3,821,079,552
    "meta-llama/Llama-2-7b-hf": (6_738_415_616, None),  # "6.74B"
    "meta-llama/Llama-2-13b-hf": (13_015_864_320, None),  # "13.0B"
    "meta-llama/Llama-2-70b-hf": (68_976_648_192, None),  # "69.0B"
    "meta-llama/Llama-3.1-8B": (8_030_261_248, None),  # "8.03B"
    "meta-llama/Llama-3.1-70B": (70_553_706_496, None),  # "70.6B"
    "meta-llama/Llama-3.1-405B": (405_853_388_800, None),  # "405B"
    "mistralai/Mistral-7B-v0.1": (7_241_732_096, None),  # "7.24B"
    "mistralai/Mixtral-8x7B-v0.1": (46_702_792_704, 12_879_925_248),  # "46.7B total, 12.9B active"
    "Qwen/Qwen2.5-7B": (7_615_616_512, None),  # "7.61B"
    "Qwen/Qwen2.5-72B-Instruct": (72_706_203_648, None),  # "72.7B"
    "google/gemma-2-9b": (9_241_705_984, None),  # "9.24B"
    "google/gemma-2-27b": (27_227_128_320, None),  # "27.2B"
    "deepseek-ai/DeepSeek-V2-Lite": (15_706_484_224, 2_661_150_208),  # "16B total, 2.4B active" (config comment)
    "tiiuae/falcon-7b": (6_921_720_704, None),  # "7B"
    "Qwen/Qwen3-14B": (14_768_307_200, None),  # "14.8B"
    "Qwen/Qwen3-32B": (32_762_123_264, None),  # "32.8B"
    "Qwen/Qwen3-30B-A3B-Instruct-2507": (30_532_122_624, 3_353_032_704),  # "30.5B total, 3.3B active"
    "unsloth/Llama-3.2-1B-Instruct": (1_235_814_400, None),  # "1.23B" (tied embeddings)
    "deepseek-ai/DeepSeek-V3": (671_026_404_352, 37_552_282_624),  # "671B total, 37B activated" (tests/test_frontier)
    "Qwen/Qwen3-235B-A22B": (235_093_634_560, 22_190_763_520),  # "235B total, 22B activated"
}

# 16-bit KV bytes per token over all layers (SOURCES.md table; Qwen3 rows: 2 × layers × 8 × 128 × 2).
KV_PER_TOKEN = {
    "meta-llama/Llama-2-7b-hf": 524_288,
    "meta-llama/Llama-2-13b-hf": 819_200,
    "meta-llama/Llama-2-70b-hf": 327_680,
    "meta-llama/Llama-3.1-8B": 131_072,
    "meta-llama/Llama-3.1-70B": 327_680,
    "meta-llama/Llama-3.1-405B": 516_096,
    "mistralai/Mistral-7B-v0.1": 131_072,
    "mistralai/Mixtral-8x7B-v0.1": 131_072,
    "Qwen/Qwen2.5-7B": 57_344,
    "Qwen/Qwen2.5-72B-Instruct": 327_680,
    "google/gemma-2-9b": 344_064,
    "google/gemma-2-27b": 376_832,
    "microsoft/Phi-3-mini-4k-instruct": 393_216,
    "deepseek-ai/DeepSeek-V2-Lite": 31_104,
    "tiiuae/falcon-7b": 8_192,
    "Qwen/Qwen3-14B": 163_840,
    "Qwen/Qwen3-32B": 262_144,
    "Qwen/Qwen3-30B-A3B-Instruct-2507": 98_304,
    "unsloth/Llama-3.2-1B-Instruct": 32_768,  # 2 × 16 × 8 × 64 × 2
    "deepseek-ai/DeepSeek-V3": 70_272,  # MLA: 61 × (512 + 64) × 2
    "Qwen/Qwen3-235B-A22B": 192_512,  # 2 × 94 × 4 × 128 × 2
}


def test_every_preset_is_pinned():
    assert set(model_presets()) == set(PARAMS) == set(KV_PER_TOKEN)


@pytest.mark.parametrize("preset", sorted(PARAMS))
def test_parameter_count(preset):
    total, active = PARAMS[preset]
    counted = count_params(get_model(preset))
    assert counted.total == total
    assert counted.active == (active or total)
    assert sum(counted.breakdown.values()) == counted.total


@pytest.mark.parametrize("preset", sorted(KV_PER_TOKEN))
def test_kv_bytes_per_token(preset):
    assert memory.kv_bytes_per_token(get_model(preset), 2) == KV_PER_TOKEN[preset]


def test_mla_latent_is_not_split_by_tp():
    ds = get_model("deepseek-ai/DeepSeek-V2-Lite")
    assert memory.kv_bytes_per_token(ds, 2, tp=4) == memory.kv_bytes_per_token(ds, 2) == 27 * (512 + 64) * 2


def test_sliding_window_caps_the_cache():
    mistral = get_model("mistralai/Mistral-7B-v0.1")  # every layer windowed at 4,096
    assert memory.kv_bytes_per_request(mistral, 2, 10_000) == 4096 * 131_072
    gemma = get_model("google/gemma-2-9b")  # half of its 42 layers windowed at 4,096
    per_layer_token = 344_064 / 42
    assert memory.kv_bytes_per_request(gemma, 2, 8192) == pytest.approx(per_layer_token * (21 * 8192 + 21 * 4096))


def test_falcon_old_keys_and_multi_query():
    falcon = get_model("tiiuae/falcon-7b")
    assert (falcon.num_layers, falcon.num_attention_heads, falcon.num_kv_heads, falcon.head_dim) == (32, 71, 1, 64)


def test_presets_match_case_insensitively():
    assert get_model("META-LLAMA/llama-3.1-8b").name == "meta-llama/Llama-3.1-8B"
