"""Primer §3-§4 worked numbers, pinned exactly."""

from __future__ import annotations

import pytest

from planner.core.model_spec import ModelSpec
from planner.memory import sizes as memory

# Primer §3: 7B, 32 layers, 32 heads, head dim 128, hidden 4,096, FP16
SEVEN_B = ModelSpec(
    name="7B",
    hidden_size=4096,
    num_layers=32,
    num_attention_heads=32,
    num_kv_heads=32,
    head_dim=128,
    intermediate_size=11008,
    vocab_size=32000,
)
FP16 = 2


def test_step1_kv_bytes_per_token():
    assert memory.kv_bytes_per_token(SEVEN_B, FP16) == 524_288  # 2 × 32 × 32 × 128 × 2


def test_step2_one_request_of_4000_tokens():
    assert memory.kv_bytes_per_request(SEVEN_B, FP16, 4000) == 2_097_152_000  # ≈ 2.10 GB
    assert round(memory.kv_bytes_per_request(SEVEN_B, FP16, 4000) / 1e9, 2) == 2.10


def test_step3_batch_of_16():
    assert round(16 * memory.kv_bytes_per_request(SEVEN_B, FP16, 4000) / 1e9, 1) == 33.6


@pytest.mark.parametrize(
    "gpu_gb, weights_gb, expected",
    [
        (48, 14, 16),  # 34 GB left / 2.097 GB
        (80, 14, 31),  # 66 GB left
        (24, 3.5, 9),  # 4-bit weights: 20.5 GB left; the cache sets the limit
    ],
)
def test_step4_5_textbook_fit(gpu_gb, weights_gb, expected):
    req = memory.kv_bytes_per_request(SEVEN_B, FP16, 4000)
    assert memory.textbook_max_requests(gpu_gb * 1e9, weights_gb * 1e9, req) == expected


def test_step6_gqa_8_kv_heads_is_4x_smaller():
    gqa = SEVEN_B.model_copy(update={"num_kv_heads": 8})
    assert memory.kv_bytes_per_request(gqa, FP16, 4000) == 524_288_000  # 0.52 GB
    assert memory.kv_bytes_per_token(SEVEN_B, FP16) / memory.kv_bytes_per_token(gqa, FP16) == 4


def test_token_positions_with_and_without_cache():
    assert memory.token_positions_without_cache(2000, 300) == 644_850  # 2,000 + 2,001 + … + 2,299
    assert memory.token_positions_with_cache(2000, 300) == 2_299


@pytest.mark.parametrize("params, bytes_per_param, gb", [(7e9, 2, 14), (7e9, 1, 7), (7e9, 0.5, 3.5), (70e9, 2, 140)])
def test_primer_4_weight_memory(params, bytes_per_param, gb):
    assert params * bytes_per_param == gb * 1e9


def test_no_free_memory_fits_nothing():
    assert memory.textbook_max_requests(10e9, 14e9, 1e9) == 0


def test_tp_splits_kv_heads_then_replicates():
    gqa = SEVEN_B.model_copy(update={"num_kv_heads": 8})
    assert memory.kv_heads_per_gpu(gqa, 4) == 2
    assert memory.kv_heads_per_gpu(gqa, 8) == 1
    assert memory.kv_heads_per_gpu(gqa, 16) == 1  # replicated beyond the KV-head count
