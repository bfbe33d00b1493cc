"""Hand-countable timelines and invariants of the replica simulator."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from planner.core.errors import InputError
from planner.sim.block_pool import BlockPool
from planner.sim.config import ConstantStepCost, LinearStepCost, SchedulerConfig, scheduler_config
from planner.sim.records import REJECT_QUEUE_FULL, REJECT_TOO_LONG, request_frame, step_frame, summary
from planner.sim.simulator import simulate
from planner.traffic.generators import closed_loop, open_loop
from planner.traffic.workload import Workload

ONE_SECOND = ConstantStepCost(1.0)


def workload(arrivals, prompts, outputs, prefix=None, prefix_block_tokens=16) -> Workload:
    return Workload(
        np.asarray(arrivals, float),
        np.asarray(prompts, np.int64),
        np.asarray(outputs, np.int64),
        None if prefix is None else tuple(np.asarray(p, np.int64) for p in prefix),
        prefix_block_tokens,
    )


def test_chunked_prefill_timeline_counted_by_hand():
    # A: t=0, prompt 10, 3 out. B: t=0.5, prompt 4, 2 out. Budget 8 tokens, 1 s per step.
    # step 0 [0,1): A prefill 8 of 10.                   B arrives during it, waits for the boundary.
    # step 1 [1,2): A last 2 prompt tokens + B's 4.      -> both first tokens at t=2.
    # step 2 [2,3): A and B decode.                      -> B has 2/2, done at 3.
    # step 3 [3,4): A decodes.                           -> A has 3/3, done at 4.
    res = simulate(
        workload([0, 0.5], [10, 4], [3, 2]),
        dict(num_gpu_blocks=100, block_size=4, max_num_seqs=4, max_num_batched_tokens=8),
        ONE_SECOND,
    )
    r = res.requests
    assert r.first_scheduled_s.tolist() == [0, 1]
    assert r.first_token_s.tolist() == [2, 2]
    assert r.finish_s.tolist() == [4, 3]
    assert res.steps.new_tokens.tolist() == [8, 6, 2, 1]  # = (10 + 3 - 1) + (4 + 2 - 1) = 17
    assert res.steps.time_s.tolist() == [0, 1, 2, 3]
    assert res.steps.num_seqs.tolist() == [1, 2, 2, 1]
    s = summary(res)
    assert s["ttft_mean_s"] == pytest.approx((2 + 1.5) / 2)
    assert s["tpot_mean_s"] == pytest.approx(((4 - 2) / 2 + (3 - 2) / 1) / 2)
    assert s["queue_wait_mean_s"] == pytest.approx(0.25)


def test_preemption_by_recompute_timeline():
    # 4 blocks of 2 tokens; A and B (t=0, prompt 2, 5 out) each end needing 3 blocks.
    # step 0: both prefill (1 block each), first tokens at t=1.   step 1: both cross into block 2 (4 used).
    # step 2: no new block.   step 3: both need block 3, 0 free: the newest (B, 4 computed tokens) is
    # preempted and freed; A decodes alone.   step 4: B needs ceil(5/2)=3 blocks, 1 free: waits; A done at 5.
    # step 5: B recomputes prompt + 3 outputs = 5 tokens, makes token 4.   step 6: token 5, done at 7.
    # (prefix caching off: B recomputes everything)
    res = simulate(
        workload([0, 0], [2, 2], [5, 5]),
        dict(num_gpu_blocks=4, block_size=2, max_num_seqs=4, max_num_batched_tokens=16, enable_prefix_caching=False),
        ONE_SECOND,
    )
    r = res.requests
    assert r.finish_s.tolist() == [5, 7]
    assert r.first_token_s.tolist() == [1, 1]
    assert r.num_preemptions.tolist() == [0, 1]
    assert r.recomputed_tokens.tolist() == [0, 4]
    assert res.steps.new_tokens.tolist() == [4, 2, 2, 1, 1, 5, 1]
    assert res.steps.kv_blocks.tolist() == [2, 4, 4, 3, 3, 3, 3]
    assert res.steps.num_waiting.tolist() == [0, 0, 0, 1, 1, 0, 0]


def test_prefix_cache_hit_skips_cached_blocks():
    # A computes prefix blocks 1,2,3 (4 tokens each) and finishes at t=2; they stay cached (evictable).
    # B at t=5 shares blocks 1,2 then differs: 8 of its 12 prompt tokens are skipped, 4 computed.
    wl = workload([0, 5], [12, 12], [2, 2], prefix=[[1, 2, 3], [1, 2, 9]], prefix_block_tokens=4)
    cfg = dict(num_gpu_blocks=100, block_size=4, max_num_batched_tokens=16, max_num_seqs=4, enable_prefix_caching=True)
    res = simulate(wl, cfg, ONE_SECOND)
    assert res.requests.prefix_hit_tokens.tolist() == [0, 8]
    assert res.steps.new_tokens.tolist() == [12, 1, 4, 1]
    assert res.requests.first_token_s.tolist() == [1, 6]
    assert summary(res)["prefix_hit_rate"] == pytest.approx(8 / 24)
    off = simulate(wl, dict(cfg, enable_prefix_caching=False), ONE_SECOND)
    assert off.steps.new_tokens.tolist() == [12, 1, 12, 1]


def test_block_pool_evicts_from_the_front_of_the_free_queue():
    # vLLM's FreeKVCacheBlockQueue: never-used blocks first, then in the order freed; a freed block stays cached.
    pool = BlockPool(num_blocks=4, blocks_per_prefix=1)
    for h in (1, 2, 3):
        pool.allocate(1)
        assert pool.register(h)
    pool.release([2])
    pool.release([1])  # released after 2: evicted after it
    assert pool.num_free == 3 and pool.num_active == 1
    pool.allocate(2)  # the never-used block, then the oldest released (2)
    assert pool.num_cached_prefix([1], 1) == 1 and pool.num_cached_prefix([2], 1) == 0
    assert pool.num_evicted_blocks == 1 and pool.num_free == 1
    with pytest.raises(RuntimeError):
        pool.allocate(2)


def test_block_pool_counts_an_id_listed_twice_twice():
    # a user's trace may list a hash id twice in one request: each listing is one reference (the entry-by-entry path)
    pool = BlockPool(num_blocks=6)
    pool.allocate(2)
    assert pool.register_all([7, 7, 8], 0, 3) == [7, 8]  # published once each
    pool.release([7, 8])
    assert pool.num_free == 6 and pool.num_cached_prefix([7, 8], 2) == 2
    pool.acquire([7, 7, 8])  # a hit listing 7 twice: 7 referenced twice, both leave the free queue once
    assert pool.prefix_refs == {7: 2, 8: 1} and pool.num_free == 4
    pool.release([7, 7, 8])  # 8 then 7 twice: both freed, still cached
    assert pool.prefix_refs == {} and pool.num_free == 6 and pool.num_cached_prefix([7, 8], 2) == 2
    pool.acquire([8, 7])
    pool.release([7, 8])  # 8 joins the queue before 7
    pool.allocate(5)  # 4 plain blocks, then 8
    assert pool.num_cached_prefix([7], 1) == 1 and pool.num_cached_prefix([8], 1) == 0
    assert pool.num_evicted_blocks == 1


def test_preempted_request_keeps_its_full_blocks_cached_until_evicted():
    pool = BlockPool(num_blocks=10)
    pool.allocate(6)
    pool.free(1, owner=7, num_cached=5)  # request 7 preempted: 1 partial block + 5 full cached ones
    assert pool.num_free == 10 and pool.num_own_cached(7) == 5
    pool.allocate(6)  # 4 never-used, the partial block, then 1 of 7's blocks (its tail first)
    assert pool.num_own_cached(7) == 4 and pool.num_evicted_blocks == 1
    assert pool.take_own(7) == 4 and pool.num_free == 0


def _busy_config(**kw) -> dict:
    return dict(dict(num_gpu_blocks=300, block_size=16, max_num_seqs=32, max_num_batched_tokens=512), **kw)


@pytest.mark.parametrize("caching", [False, True])
def test_tokens_and_requests_conserved_under_preemption(caching):
    rng = np.random.default_rng(3)
    wl0 = open_loop(600, 6.0, "uniform:20,900", "uniform:1,300", seed=3)
    prefix = tuple(
        np.concatenate(([rng.integers(0, 3)], rng.integers(10, 10**6, size=p // 16)))[: p // 16]
        for p in wl0.prompt_tokens
    )
    wl = Workload(wl0.arrival_s, wl0.prompt_tokens, wl0.output_tokens, prefix, 16)
    res = simulate(wl, _busy_config(enable_prefix_caching=caching), LinearStepCost(0.01, 2e-5, 1e-6))
    r = res.requests
    assert r.num_preemptions.sum() > 0
    assert r.finished.all() and (r.rejected == 0).all()
    computed = (r.prompt_tokens + r.output_tokens - 1 - r.prefix_hit_tokens + r.recomputed_tokens).sum()
    assert res.steps.new_tokens.sum() == computed
    assert (caching and r.prefix_hit_tokens.sum() > 0) or (not caching and r.prefix_hit_tokens.sum() == 0)
    assert np.all(r.first_scheduled_s >= r.arrival_s)
    assert np.all(r.first_token_s > r.first_scheduled_s) and np.all(r.finish_s >= r.first_token_s)


def test_kv_never_above_pool_and_running_within_limits():
    wl = open_loop(800, 20.0, "lognormal:mean=400,sigma=1", "lognormal:mean=150,sigma=1", seed=5)
    res = simulate(wl, _busy_config(num_gpu_blocks=120), LinearStepCost(0.005, 1e-5, 1e-7))
    assert res.requests.num_preemptions.sum() > 0
    assert res.steps.kv_blocks.max() <= 120 and res.peak_kv_blocks <= 120
    assert res.steps.num_running.max() <= 32 and res.steps.new_tokens.max() <= 512
    assert np.all(np.diff(res.steps.time_s) > 0)


def test_same_seed_same_result_and_seed_is_kept():
    wl = open_loop(300, 10.0, "uniform:10,500", "uniform:1,100", process="gamma", cv=3.0, seed=11)
    cfg = _busy_config(spec_k=3, spec_alpha=0.7, spec_draft_cost_s=0.001)
    a, b = (simulate(wl, cfg, LinearStepCost(0.01, 1e-5), seed=7) for _ in range(2))
    assert a.seed == 7 and wl.seed == 11
    assert np.array_equal(a.requests.finish_s, b.requests.finish_s)
    assert np.array_equal(a.steps.time_s, b.steps.time_s)
    c = simulate(wl, cfg, LinearStepCost(0.01, 1e-5), seed=8)
    assert not np.array_equal(a.requests.finish_s, c.requests.finish_s)


def test_queue_limit_rejects_and_too_long_requests_are_rejected():
    # 5 requests at t=0: the first step admits 1 (max_num_seqs=1), 2 may wait (max_queue=2), the newest 2 are
    # refused; the 1000-token prompt needs 250 > 10 blocks.
    wl = workload([0] * 5 + [0.5], [4] * 5 + [1000], [3] * 5 + [1])
    res = simulate(
        wl, dict(num_gpu_blocks=10, block_size=4, max_num_seqs=1, max_num_batched_tokens=8, max_queue=2), ONE_SECOND
    )
    assert res.requests.rejected.tolist() == [0, 0, 0, REJECT_QUEUE_FULL, REJECT_QUEUE_FULL, REJECT_TOO_LONG]
    s = summary(res)
    assert s["num_rejected_queue_full"] == 2 and s["num_rejected_too_long"] == 1 and s["num_finished"] == 3


def test_closed_loop_users_bound_the_system():
    wl = closed_loop(num_users=4, num_requests=200, think_time_s=0.5, prompt="fixed:100", output="fixed:20", seed=2)
    res = simulate(wl, _busy_config(), LinearStepCost(0.01, 1e-5))
    r = res.requests
    assert r.finished.all()
    assert (res.steps.num_running + res.steps.num_waiting).max() <= 4
    # each user's next request arrives one think time after the previous reply
    nxt = np.arange(4, 200)
    assert np.allclose(r.arrival_s[nxt], r.finish_s[nxt - 4] + wl.think_s[nxt])


def test_speculative_decoding_expected_tokens_per_pass():
    # primer §8: expected tokens per large pass = (1 - a^(k+1)) / (1 - a); k=4, a=0.6 -> 2.3056
    k, alpha, out = 4, 0.6, 40_000
    res = simulate(
        workload([0], [10], [out]), dict(num_gpu_blocks=4000, spec_k=k, spec_alpha=alpha), ONE_SECOND, seed=1
    )
    decode_steps = len(res.steps) - 1  # the first step is the prefill
    assert (out - 1) / decode_steps == pytest.approx((1 - alpha ** (k + 1)) / (1 - alpha), rel=0.01)


def test_speculative_decoding_draft_cost_and_all_accepted():
    # alpha = 1: every step yields k + 1 = 4 tokens; 1 + 12 outputs -> prefill + 3 verify steps, each 1 + 3 x 0.1 s
    res = simulate(
        workload([0], [10], [13]), dict(num_gpu_blocks=100, spec_k=3, spec_alpha=1.0, spec_draft_cost_s=0.1), ONE_SECOND
    )
    assert res.steps.new_tokens.tolist() == [10, 4, 4, 4]
    assert res.requests.finish_s[0] == pytest.approx(1 + 3 * 1.3)


def test_report_frames():
    res = simulate(
        open_loop(200, 5.0, "fixed:100", "fixed:10", seed=1), _busy_config(slo_ttft_s=0.05), LinearStepCost(0.01, 1e-5)
    )
    df = request_frame(res)
    assert len(df) == 200 and {"ttft_s", "tpot_s", "e2e_s", "queue_wait_s"} <= set(df.columns)
    assert len(step_frame(res, max_points=50)) <= 50
    s = summary(res)
    assert 0 <= s["slo_attainment"] <= 1 and s["goodput_requests_per_s"] <= s["throughput_requests_per_s"]


@pytest.mark.parametrize(
    "bad, field",
    [
        (dict(num_gpu_blocks=0), "num_gpu_blocks"),
        (dict(num_gpu_blocks=10, max_num_seqs=300, max_num_batched_tokens=256), "max_num_batched_tokens"),
        (dict(num_gpu_blocks=10, spec_alpha=1.5), "spec_alpha"),
        (dict(num_gpu_blocks=10, colour="red"), "colour"),
    ],
)
def test_bad_config_names_the_field(bad, field):
    with pytest.raises(InputError) as err:
        scheduler_config(bad)
    assert err.value.field == field


def test_config_is_frozen():
    cfg = SchedulerConfig(num_gpu_blocks=10)
    with pytest.raises(ValidationError):
        cfg.block_size = 32
