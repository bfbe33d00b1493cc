"""Benchmark clients through a given xPyD layout, request by request: a hand-counted single client, and the queue a
saturated prefill pool keeps in a closed loop."""

from __future__ import annotations

import pytest

from planner.capacity.disagg_benchmark import simulate_benchmark
from planner.capacity.disagg_layout import DECODE_STEPS_TO_FIRST_TOKEN, HANDOFF_FIXED_S, PoolLayout, instance
from planner.capacity.disagg_pools import decode_step_s
from planner.core.scenario import Scenario
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel

S = Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=Deployment(max_model_len=8192))


def test_one_client_waits_for_nothing():
    # TTFT = the request path + prefill + KV transfer + 20 ms hand-off + 1.5 decode steps of one sequence + the
    # decode engine's output lag in steps; TPOT = that step
    run = simulate_benchmark(S, 1, PoolLayout(1, 1), PoolLayout(1, 1), 2000, 101, 8)
    pm_d = PerfModel(instance(S, PoolLayout(1, 1), "decode"))
    path = PerfModel(instance(S, PoolLayout(1, 1), "prefill")).request_path_s
    step = decode_step_s(pm_d, 1, 2000 + 101 / 2)
    lag = pm_d.eff.first_token_lag_steps
    expected = path + run.prefill_s + run.kv_transfer_s + HANDOFF_FIXED_S + (DECODE_STEPS_TO_FIRST_TOKEN + lag) * step
    assert run.ttft_s == pytest.approx(expected, rel=1e-9)
    assert run.tpot_s == pytest.approx(step, rel=1e-9)
    assert run.prefill_wait_s == 0 and run.decode_wait_s == 0


def test_a_saturated_prefill_rank_keeps_the_clients_queued():
    # 64 clients, 6,000-token prompts on ONE TP 1 prefill rank, 20-token answers on 4 decode ranks: the prefill
    # rank serves one prompt per t_p, so each client's cycle is 64 t_p and TTFT = 64 t_p − decode time
    run = simulate_benchmark(S, 64, PoolLayout(1, 1), PoolLayout(4, 1), 6000, 20, 64)
    decode_s = run.tpot_s * 19
    assert run.rate_per_s == pytest.approx(1 / run.prefill_s, rel=0.05)
    assert run.ttft_s == pytest.approx(64 * run.prefill_s - decode_s - 0.002, rel=0.05)  # 2 ms client turnaround
    assert run.prefill_wait_s > 50 * run.prefill_s


def test_decode_ranks_hold_no_more_than_their_kv_pool():
    # at 45% of an H100, Llama-3.1-8B BF16 leaves a KV pool for a handful of 8,000-token sequences: the decode rank
    # runs that many at once whatever the batch limit says, and the rest wait for a slot before their first token
    from planner.capacity.disagg_pools import decode_kv_limit

    tight = S.model_copy(update={"deployment": Deployment(max_model_len=8192, gpu_memory_utilization=0.45)})
    kv_seqs = decode_kv_limit(instance(tight, PoolLayout(1, 1), "decode"), 7000, 1000)
    assert 1 <= kv_seqs < 32
    run = simulate_benchmark(tight, 32, PoolLayout(4, 1), PoolLayout(1, 1), 7000, 1000, 256)
    assert run.decode_limit == kv_seqs and run.decode_wait_s > 0


def test_the_burst_round_counts_one_in_r_by_hand():
    # 4 clients on one prefill rank, light decode load: started together, the first round's prompts wait 0, 1, 2
    # and 3 prefills (1.5 t_p on average) before their own; R = 20 measured rounds weigh that round 1/20
    args = (S, 4, PoolLayout(1, 1), PoolLayout(1, 1), 2000, 101, 8)
    steady, burst = simulate_benchmark(*args), simulate_benchmark(*args, burst_of=20)
    one_round = simulate_benchmark(*args, burst_of=1)  # only the burst round
    assert one_round.ttft_s - steady.ttft_s == pytest.approx(1.5 * steady.prefill_s, rel=0.1)
    assert burst.ttft_s == pytest.approx((one_round.ttft_s + 19 * steady.ttft_s) / 20, rel=1e-9)


def test_the_last_measured_round_decodes_beside_every_client():
    # 48 clients of 4,000 / 101 tokens on 4 prefill ranks and 1 decode rank: their KV reads make the decode step
    # grow with the batch. A closed loop's last round drains (nobody replaces a client that finishes), so measured
    # alone it would decode beside ever fewer others (15.2 -> 13.8 ms); a round simulated after the measured ones
    # keeps it at the others' TPOT, so one measured round gives what four give
    args = (S, 48, PoolLayout(4, 1), PoolLayout(1, 1), 4000, 101, 64)
    four, one = simulate_benchmark(*args), simulate_benchmark(*args, measured_rounds=1)
    assert one.tpot_s == pytest.approx(four.tpot_s, rel=0.01)
    assert one.decode_batch_per_rank > 40  # most of the 48 clients decoding when each joins
