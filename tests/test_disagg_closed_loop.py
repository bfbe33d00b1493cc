"""A given xPyD layout under a closed loop of C clients: Little's law over the request cycle, and the queue before
the first token once the layout saturates."""

from __future__ import annotations

import pytest

from planner.capacity.disagg_closed_loop import closed_loop
from planner.capacity.disagg_layout import HANDOFF_FIXED_S, PoolLayout
from planner.core.scenario import Scenario
from planner.core.specs import Deployment

S = Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=Deployment(max_model_len=4096))


def test_light_load_obeys_littles_law_over_the_cycle():
    # 8 clients on 1P1D TP 1: C = λ × (TTFT + (O − 1) × TPOT)
    loop = closed_loop(S, 8, PoolLayout(1, 1), PoolLayout(1, 1), 1000, 200, 256)
    assert loop.bottleneck == "none"
    assert loop.rate_per_s * (loop.ttft_s + 199 * loop.tpot_s) == pytest.approx(8, rel=1e-3)
    assert loop.ttft_s > loop.prefill_s + loop.kv_transfer_s + HANDOFF_FIXED_S  # the hand-off is in TTFT
    assert 1 <= loop.decode_batch_per_rank <= 8


def test_saturated_prefill_puts_the_queue_before_the_first_token():
    # 4,000 clients and long prompts on one TP 1 prefill instance: it runs near its capacity 1 / t_p and the
    # clients wait in its queue, so TTFT = C / λ − (O − 1) × TPOT is most of the cycle
    loop = closed_loop(S, 4000, PoolLayout(1, 1), PoolLayout(4, 1), 3000, 50, 1024)
    assert loop.bottleneck == "prefill"
    assert loop.rate_per_s == pytest.approx(1 / loop.prefill_s, rel=0.02)
    assert loop.ttft_s == pytest.approx(4000 / loop.rate_per_s - 49 * loop.tpot_s, rel=1e-3)
    assert loop.ttft_s > 0.9 * 4000 * loop.prefill_s


def test_more_decode_ranks_lower_tpot_at_the_same_concurrency():
    one = closed_loop(S, 256, PoolLayout(2, 1), PoolLayout(1, 1), 500, 500, 256)
    four = closed_loop(S, 256, PoolLayout(2, 1), PoolLayout(4, 1), 500, 500, 256)
    assert four.tpot_s < one.tpot_s and four.decode_batch_per_rank < one.decode_batch_per_rank


def test_a_burst_round_adds_the_queued_prefills_by_hand():
    # 8 clients on 2 prefill ranks at light load: the measured rounds start with all 8 together, 4 per rank, which
    # wait 0, 1, 2 and 3 prefills: (4 − 1) / 2 = 1.5 t_p on average; that round counts 1/10 of the mean, so
    # TTFT = steady + 1.5 t_p / 10 (less the little the steady state already waits); TPOT unchanged
    steady = closed_loop(S, 8, PoolLayout(2, 1), PoolLayout(1, 1), 1000, 200, 256)
    burst = closed_loop(S, 8, PoolLayout(2, 1), PoolLayout(1, 1), 1000, 200, 256, burst_of=10)
    assert burst.tpot_s == steady.tpot_s
    extra = burst.ttft_s - steady.ttft_s
    assert 0 < extra <= 1.5 * steady.prefill_s / 10 + 1e-12
    assert extra == pytest.approx(1.5 * steady.prefill_s / 10, rel=0.2)
    # one client has nothing to queue behind
    one = closed_loop(S, 1, PoolLayout(1, 1), PoolLayout(1, 1), 1000, 200, 256)
    alone = closed_loop(S, 1, PoolLayout(1, 1), PoolLayout(1, 1), 1000, 200, 256, burst_of=10)
    assert alone.ttft_s == pytest.approx(one.ttft_s, rel=1e-12)  # (burst + 9 × steady) / 10, rounded
