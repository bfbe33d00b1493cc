"""Primer §2 and §5 worked numbers in "given rates" mode, pinned exactly."""

from __future__ import annotations

import pytest

from planner.core.errors import InputError
from planner.latency.metrics import batching_tradeoff, given_rates

# 2,000-token prompt, 300 output tokens, 40 ms queue wait, prefill at 10,000 tokens/s, TPOT 25 ms
BASE = dict(prompt_tokens=2000, output_tokens=300, queue_wait_s=0.040, prefill_tokens_per_s=10_000, tpot_s=0.025)


def test_step1_prefill_and_ttft():
    m = given_rates(**BASE)
    assert m.prefill_s == pytest.approx(0.200)  # 2,000 / 10,000
    assert m.ttft_s == pytest.approx(0.240)  # 40 + 200 ms


def test_step2_tokens_per_second():
    assert given_rates(**BASE).tokens_per_s == pytest.approx(40)  # 1 / 0.025


def test_step3_end_to_end_and_decode_share():
    m = given_rates(**BASE)
    assert m.e2e_s == pytest.approx(7.715)  # 0.240 + 299 × 0.025
    assert round(m.decode_share, 2) == 0.97  # 7.475 / 7.715


def test_step4_halving_the_prompt_gains_only_a_tenth_of_a_second():
    m = given_rates(**{**BASE, "prompt_tokens": 1000})
    assert m.e2e_s == pytest.approx(7.615)
    assert given_rates(**BASE).e2e_s - m.e2e_s == pytest.approx(0.1)


def test_step4_capping_the_output_is_the_bigger_lever():
    assert given_rates(**{**BASE, "output_tokens": 150}).e2e_s == pytest.approx(3.965)  # 0.240 + 149 × 0.025


def test_step5_cached_prefix_cuts_ttft():
    m = given_rates(**BASE, cached_prefix_tokens=1500)  # prefill 500 tokens = 50 ms
    assert m.prefill_s == pytest.approx(0.050)
    assert m.ttft_s == pytest.approx(0.090)  # 240 → 90 ms


def test_batch_of_32_at_40ms():
    t = batching_tradeoff(single_tpot_s=0.025, batch_tpot_s=0.040, batch=32, ttft_s=0.240, output_tokens=300)
    assert t.per_user_tokens_per_s == pytest.approx(25)
    assert round(t.e2e_s, 1) == 12.2  # 0.240 + 299 × 0.040 = 12.2
    assert t.server_tokens_per_s == pytest.approx(800)  # 32 / 0.040
    assert t.throughput_gain == pytest.approx(20)  # 800 / 40
    assert t.latency_factor == pytest.approx(1.6)  # 40 / 25 ms


def test_bad_rates_name_the_field():
    with pytest.raises(InputError) as err:
        given_rates(**{**BASE, "tpot_s": 0})
    assert err.value.field == "tpot_s"
