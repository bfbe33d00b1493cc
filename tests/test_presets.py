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
    "deepseek-ai/DeepSeek-V3": (671_026_404_352, 37_552_282_624),
    # Moonshot's card: "1T total parameters, 32B activated" (the text model; the vision tower's vt_* keys not counted)
    "moonshotai/Kimi-K2.5": (1_026_408_209_408, 32_861_477_888),  # "671B total, 37B activated" (tests/test_frontier)
    "Qwen/Qwen3-235B-A22B": (235_093_634_560, 22_190_763_520),  # "235B total, 22B activated"
    # Hybrid, sparse-attention and MTP models, counted by planner.core.params from data/models (the model cards'
    # figures and their conventions are checked in tests/test_layer_kinds.py). MTP modules are not in `total` (vLLM
    # loads them only for speculative decoding); vision towers are (Qwen3.5, Gemma-4 carry them in the checkpoint).
    "Qwen/Qwen3-235B-A22B-FP8": (235_093_634_560, 22_190_763_520),
    "Qwen/Qwen3-30B-A3B": (30_532_122_624, 3_353_032_704),  # "30.5B total, 3.3B activated"
    "Qwen/Qwen3-8B": (8_190_735_360, None),  # "8.2B"
    "Qwen/Qwen3.5-397B-A17B": (396_802_115_056, 17_348_795_136),  # active excludes the vision tower
    "Qwen/Qwen3.5-122B-A10B": (122_562_670_320, 9_771_141_120),
    "Qwen/Qwen3.5-35B-A3B": (35_107_100_016, 3_454_907_008),
    "Qwen/Qwen3.5-27B": (27_356_728_560, 26_895_998_464),
    "deepseek-ai/DeepSeek-R1": (671_026_404_352, 37_552_282_624),  # V3 architecture: "671B total, 37B activated"
    "deepseek-ai/DeepSeek-V3.2": (671_877_929_216, 38_403_807_488),  # + the indexer; 685 B with MTP
    "deepseek-ai/DeepSeek-V4-Flash": (283_811_151_040, 13_278_543_040),  # "284B total, 13B activated"
    "deepseek-ai/DeepSeek-V4-Pro": (1_571_741_596_288, 48_523_475_584),  # "1.6T total, 49B activated"
    "google/gemma-4-26B-A4B": (25_656_780_016, 3_822_019_840),
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": (107_769_861_120, 17_172_894_720),  # text model only
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": (400_711_848_960, 17_184_691_200),  # "400B, 17B active"
    "mistralai/Mixtral-8x22B-v0.1": (140_620_634_112, 39_152_031_744),  # "141B total, 39B active"
    "nvidia/Nemotron-H-56B-Base-8K": (56_324_350_464, None),  # "56B"
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8": (120_668_687_360, 12_770_216_960),  # "120B, 12B active"
    "openai/gpt-oss-120b": (116_829_156_672, 5_711_982_912),  # card: 116.83B total (5.13B active w/o embedding)
    "openai/gpt-oss-20b": (20_914_757_184, 4_187_440_704),  # card: 20.91B total (3.61B active w/o embedding)
    "stepfun-ai/Step-3.7-Flash": (195_832_700_160, 10_863_893_760),
    "XiaomiMiMo/MiMo-V2-Flash": (308_778_768_832, 15_445_924_288),  # "309B total, 15B active"
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
    "moonshotai/Kimi-K2.5": 70_272,  # MLA as DeepSeek-V3: 61 × (512 + 64) × 2
    "Qwen/Qwen3-235B-A22B": 192_512,  # 2 × 94 × 4 × 128 × 2
    # token-caching layers only (before windows cap them; tests/test_layer_kinds.py works them by hand)
    "Qwen/Qwen3-235B-A22B-FP8": 192_512,
    "Qwen/Qwen3-30B-A3B": 98_304,  # 2 × 48 × 4 × 128 × 2
    "Qwen/Qwen3-8B": 147_456,  # 2 × 36 × 8 × 128 × 2
    "Qwen/Qwen3.5-397B-A17B": 30_720,  # 15 full layers × 2 × 2 × 256 × 2
    "Qwen/Qwen3.5-122B-A10B": 24_576,  # 12 × 2 × 2 × 256 × 2
    "Qwen/Qwen3.5-35B-A3B": 20_480,  # 10 × 2 × 2 × 256 × 2
    "Qwen/Qwen3.5-27B": 65_536,  # 16 × 2 × 4 × 256 × 2
    "deepseek-ai/DeepSeek-R1": 70_272,
    "deepseek-ai/DeepSeek-V3.2": 78_324,  # 61 × ((512 + 64) × 2 + 132 indexer bytes)
    "deepseek-ai/DeepSeek-V4-Flash": 43 * 1024 + 21 * (1024 + 132) / 4 + 20 * 1024 / 128,
    "deepseek-ai/DeepSeek-V4-Pro": 61 * 1024 + 30 * (1024 + 132) / 4 + 31 * 1024 / 128,
    "google/gemma-4-26B-A4B": 215_040,  # 25 × 2 × 8 × 256 × 2 + 5 × 2 × 512 × 2 (K = V)
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": 196_608,  # 2 × 48 × 8 × 128 × 2
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": 196_608,
    "mistralai/Mixtral-8x22B-v0.1": 229_376,  # 2 × 56 × 8 × 128 × 2
    "nvidia/Nemotron-H-56B-Base-8K": 40_960,  # 10 attention layers × 2 × 8 × 128 × 2
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8": 8_192,  # 8 × 2 × 2 × 128 × 2
    "openai/gpt-oss-120b": 73_728,  # 36 × 2 × 8 × 64 × 2
    "openai/gpt-oss-20b": 49_152,  # 24 × 2 × 8 × 64 × 2
    "stepfun-ai/Step-3.7-Flash": 184_320,  # 45 × 2 × 8 × 128 × 2
    "XiaomiMiMo/MiMo-V2-Flash": 222_720,  # 9 × 4 × (192 + 128) × 2 + 39 × 8 × (192 + 128) × 2
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
    assert memory.kv_bytes_per_token(get_model(preset), 2) == pytest.approx(KV_PER_TOKEN[preset], rel=1e-12)


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
