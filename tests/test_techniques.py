"""Technique what-ifs pinned to the primer and to hand counts: prefix caching, PagedAttention, FlashAttention,
quantization formats, tensor parallelism and multi-LoRA."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.catalog import get_model, weight_precisions
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel
from planner.memory.plan import plan_memory
from planner.techniques import flash_attention as fa
from planner.techniques import lora
from planner.techniques import prefix_cache as pc
from planner.techniques.paged_attention import compare, paged_blocks, sample_lengths
from planner.techniques.quantization import compare_formats
from planner.techniques.tensor_parallel import compare_tp, min_fitting_tp
from planner.traffic.traces import load_trace
from planner.traffic.workload import Workload


@pytest.fixture(scope="module")
def r8b():
    return resolve(Scenario())


# -- prefix caching -----------------------------------------------------------------------------------------
def test_primer_ttft_240_to_90_ms():
    # 2,000-token prompt, 1,500 cached, 10,000 tokens/s, 40 ms queue: 40 + 200 = 240 → 40 + 50 = 90 ms
    t = pc.ttft_given_rates(2000, 1500, 0.040, 10_000)
    assert t.before_s * 1e3 == pytest.approx(240.0)
    assert t.after_s * 1e3 == pytest.approx(90.0)


def test_prefix_report_at_a_hit_rate_by_hand(r8b):
    # the primer's 240 → 90 ms; half the requests hit: (240 + 90) / 2 = 165 ms expected
    o = pc.prefix_report(r8b, 2000, 2300, 1500, hit_rate=0.5, num_sharing=16, queue_wait_s=0.040)
    assert o.ttft_given.expected_s(0.5) * 1e3 == pytest.approx(165.0)
    assert o.to_dict()["ttft_given_rates_ms"] == pytest.approx({"before": 240.0, "after": 90.0, "expected": 165.0})
    # 1,500 tokens fill 93 whole blocks of 16 = 1,488 cached; 15 other requests reuse them: 15 × 93 = 1,395 blocks
    assert (o.cached_tokens_on_hit, o.kv_blocks_saved) == (1488, 1395)
    assert o.kv_bytes_saved == 1395 * 16 * 131_072  # Llama-3.1-8B: 131,072 B of KV per token
    assert o.max_requests_without_sharing == o.pool_blocks // 144  # 2,300 tokens = 144 blocks
    assert o.max_requests_with_sharing == (o.pool_blocks - 93) // (144 - 93)


def test_model_mode_ttft_drops_with_the_cached_prefix(r8b):
    t = pc.ttft_model(PerfModel(r8b), 2000, pc.cacheable_tokens(1500, 16))
    assert 0 < t.after_s < t.before_s


def test_prefill_flops_saved_by_hand(r8b):
    pm = PerfModel(r8b)
    c = 1488
    matmul = 2 * pm.flops_per_token * pm.tp / 2  # flops_per_token is already 2 × body params / TP
    by_hand = matmul * c + pm.attn_flops_full * pm.tp * c * (c + 1) / 2  # positions 1..c attend to ≤ themselves
    assert pc.prefill_flops_saved(pm, 2000, c) == pytest.approx(by_hand, rel=1e-9)


def test_kv_blocks_saved_and_cacheable_tokens():
    assert pc.cacheable_tokens(1500, 16) == 1488  # whole blocks only
    assert pc.kv_blocks_saved(1500, 16, 16) == 15 * 93  # 15 extra requests × floor(1500 / 16) blocks
    assert pc.kv_blocks_saved(1500, 16, 1) == 0
    # pool of 1,000 blocks, requests of 2,300 tokens (144 blocks), 93 shared: (1000 − 93) // (144 − 93) = 17
    assert pc.max_requests_shared(1000, 2300, 1500, 16) == 17


def test_stable_text_first():
    ex = pc.stable_first_example(1500, 500, 16)
    assert ex.stable_first == 1488 and ex.changing_first == 0


def test_hit_rate_by_hand():
    ids = (np.array([1, 2, 3]), np.array([1, 2, 4]), np.array([5, 2, 3]), np.array([1, 2, 3]))
    w = Workload(np.arange(4.0), np.array([1536, 1536, 1536, 1536]), np.ones(4, dtype=np.int64), ids, 512)
    h = pc.trace_hit_rate(w, cache_blocks=2)
    # infinite: 0 + 2 (1, 2) + 0 (5 is new: the match stops at the first block) + 3 = 5 of 12
    assert h.hit_blocks_infinite == 5 and h.num_blocks == 12
    assert h.hit_rate_infinite == pytest.approx(5 / 12)
    assert h.hit_blocks_lru <= h.hit_blocks_infinite


@pytest.fixture(scope="module")
def mooncake():
    return load_trace("mooncake")


def test_mooncake_hit_rate_is_a_stable_fraction(mooncake, r8b):
    blocks = pc.trace_cache_blocks(plan_memory(r8b).kv_cache_tokens, mooncake.prefix_block_tokens)
    a, b = pc.trace_hit_rate(mooncake, blocks), pc.trace_hit_rate(mooncake, blocks)
    assert 0 < a.hit_rate_infinite < 1 and 0 < a.hit_rate_lru < 1
    assert a.hit_rate_lru <= a.hit_rate_infinite
    assert (a.hit_rate_infinite, a.hit_rate_lru) == (b.hit_rate_infinite, b.hit_rate_lru)


# -- PagedAttention -----------------------------------------------------------------------------------------
def test_paged_fits_at_least_as_many_as_contiguous(r8b):
    lengths = sample_lengths(
        "lognormal:mean=2000,sigma=0.8", "lognormal:mean=300,sigma=0.8", 2000, 0, r8b.max_model_len
    )
    for reserve in (None, 8192, 4096):
        c = compare(r8b, lengths, reserve)
        assert c.paged_max_requests >= c.contiguous_max_requests
        assert c.paged_waste_fraction < c.contiguous_waste_fraction


def test_paged_counts_by_hand(r8b):
    lengths = np.array([100, 1000, 2048])  # blocks of 16: 7, 63, 128 → mean 66
    assert list(paged_blocks(lengths, 16)) == [7, 63, 128]
    c = compare(r8b, lengths, reserve_tokens=4096)
    plan = plan_memory(r8b)
    assert c.paged_max_requests == plan.num_gpu_blocks // 66
    assert c.contiguous_max_requests == plan.kv_cache_tokens // 4096
    assert c.contiguous_waste_fraction == pytest.approx(1 - (3148 / 3) / 4096)


# -- FlashAttention -----------------------------------------------------------------------------------------
def test_flash_attention_memory_by_hand():
    m = fa.attention_memory(batch=1, heads=32, q_tokens=4096, kv_tokens=4096, bytes_per_value=2)
    assert m.standard_bytes == 1 * 32 * 4096 * 4096 * 2 == 1_073_741_824
    assert m.flash_hbm_bytes == 1 * 32 * 4096 * 4 == 524_288  # one fp32 log-sum-exp per query row
    assert m.flash_tile_bytes == 128 * 128 * 4 == 65_536
    assert m.ratio == 2048
    assert fa.score_matrix_bytes(8, 32, 2000, 2000) == 8 * 32 * 2000**2 * 2


# -- quantization formats -----------------------------------------------------------------------------------
def test_weight_format_changes_weights_not_the_kv_cache(r8b):
    rows = [row for row in compare_formats(r8b, 2300, 32) if row.id != "fp32"]  # FP32 activations: 4-byte cache
    assert len({row.kv_bytes_per_token for row in rows}) == 1
    assert rows[0].kv_bytes_per_token == 2 * 32 * 8 * 128 * 2  # Llama-3.1-8B: 131,072 B
    formats = weight_precisions()
    for keeps_16bit in (
        True,
        False,
    ):  # GPTQ/AWQ/FP8 keep embeddings at 16 bits, GGUF averages cover them: compare alike
        alike = sorted(
            (row for row in rows if formats[row.id].keeps_embeddings_16bit == keeps_16bit),
            key=lambda row: row.bits_per_weight,
        )
        weights = [row.weight_bytes for row in alike]
        assert len(weights) > 2 and all(a <= b for a, b in zip(weights, weights[1:]))
    fp16, int4 = (next(row for row in rows if row.id == pid) for pid in ("fp16", "awq-int4"))
    assert int4.kv_pool_bytes_per_gpu > fp16.kv_pool_bytes_per_gpu
    assert int4.max_requests > fp16.max_requests
    assert int4.decode_tokens_per_s_batch1 > fp16.decode_tokens_per_s_batch1
    assert "llama.cpp" in next(row for row in rows if row.id == "q4_k_m").engines
    assert "vllm" in int4.engines


# -- tensor parallelism -------------------------------------------------------------------------------------
def test_70b_fp16_on_80gb_needs_tp_2():
    r = resolve(Scenario(model="meta-llama/Llama-2-70b-hf", gpu="A100-80GB", deployment=Deployment(weights="fp16")))
    rows = compare_tp(r, batch=8, context_tokens=2150)
    assert rows[0].weights_per_gpu_bytes > 80e9 and not rows[0].fits  # ~138 GB > 80 GB
    assert rows[1].fits and rows[1].weights_per_gpu_bytes < 80e9
    assert min_fitting_tp(rows) == 2
    tpot = [row.tpot_batch1_s for row in rows[1:]]
    assert tpot[0] > tpot[1] > tpot[2]  # more GPUs read their shard in parallel
    assert all(row.communication_s > 0 for row in rows[1:])


# -- multi-LoRA ---------------------------------------------------------------------------------------------
def test_lora_adapter_bytes_by_hand():
    m = get_model("meta-llama/Llama-2-7b-hf")
    # 16 × (4096 + 4096) × 4 modules × 32 layers × 2 bytes
    assert lora.adapter_bytes(m, 16, ("q", "k", "v", "o")) == 16 * (4096 + 4096) * 4 * 32 * 2 == 33_554_432
    mlp = lora.adapter_bytes(m, 16, ("gate", "up", "down"))
    assert mlp == 16 * 3 * (4096 + 11008) * 32 * 2


def test_lora_slots_come_out_of_the_kv_pool():
    r = resolve(Scenario(model="meta-llama/Llama-2-7b-hf"))
    none, many = (lora.lora_plan(r, 64, lora.ALL_MODULES, n, 2300) for n in (0, 64))
    assert many.kv_pool_bytes_with == pytest.approx(none.kv_pool_bytes_without - 64 * many.adapter_bytes)
    assert many.max_requests_with < none.max_requests_with
    assert many.adapters_fit_keeping < many.adapters_fit_in_pool
