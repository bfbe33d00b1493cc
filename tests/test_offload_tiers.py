"""KV offload tiers inside the simulator (planner/sim/offload_tiers.py): reload time by hand, hits after a GPU
eviction, hit rate against CPU tier size, offload off = the simulator as before, Little's law."""

from __future__ import annotations

import numpy as np
import pytest

from planner.sim.config import ConstantStepCost, LinearStepCost
from planner.sim.offload_tiers import OffloadConfig, OffloadTiers, reload_time_s
from planner.sim.records import latencies, summary, time_average
from planner.sim.simulator import simulate
from planner.traffic.sessions import sessions
from planner.traffic.workload import Workload

# Llama-3.1-8B BF16 on one GPU: 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 B per token;
# a 16-token block = 2,097,152 B (primer: KV bytes per token)
BLOCK_BYTES = 16 * 131_072
PCIE5_MEASURED = 55.63e9  # nvbandwidth host_to_device_memcpy_ce on a PCIe Gen5 x16 GPU (data/kv_tiers.yaml)


def offload(cpu_blocks: int, **kw) -> OffloadConfig:
    return OffloadConfig(
        cpu_blocks=cpu_blocks, block_bytes_per_gpu=BLOCK_BYTES, cpu_bytes_per_s=PCIE5_MEASURED, cpu_latency_s=1e-5, **kw
    )


def test_reload_time_of_n_blocks_by_hand():
    # 100 blocks x 2,097,152 B = 209.7152 MB over 55.63 GB/s = 3.76982 ms, + 10 us latency = 3.77982 ms
    assert reload_time_s(100, BLOCK_BYTES, PCIE5_MEASURED, 1e-5) == pytest.approx(3.77982e-3, rel=1e-5)
    assert reload_time_s(0, BLOCK_BYTES, PCIE5_MEASURED, 1e-5) == 0.0  # nothing moves, nothing is paid
    # an SSD hit pays the NVMe link: 8 blocks x 2,097,152 B / 14 GB/s = 1.19837 ms + 100 us = 1.29837 ms
    tiers = OffloadTiers(offload(4, ssd_blocks=100, ssd_bytes_per_s=14e9, ssd_latency_s=1e-4), 1, 16)
    tiers.store(range(12))  # CPU keeps the last 4 (8..11); 0..7 fall to the SSD tier
    assert list(tiers.cpu.ids) == [8, 9, 10, 11] and list(tiers.ssd.ids) == list(range(8))
    assert tiers.lookup(list(range(12)), 0, 12, set()) == 12
    assert tiers.reload(list(range(8))) == pytest.approx(1.29837e-3, rel=1e-5)
    assert tiers.stats.hit_entries == {"cpu": 0, "ssd": 8}


def three_requests() -> Workload:
    # R0 and R2 send the same 160 tokens (prefix ids 1..10), R1 another 160 (ids 101..110); 1 output token each
    ids = (np.arange(1, 11), np.arange(101, 111), np.arange(1, 11))
    return Workload(np.array([0.0, 10.0, 20.0]), np.full(3, 160), np.ones(3, dtype=np.int64), ids, 16)


@pytest.mark.parametrize("policy", ["write_through", "write_back"])
def test_a_returning_prompt_reloads_its_evicted_blocks_from_the_cpu_tier_counted_by_hand(policy):
    # 12 GPU blocks. R0 computes 10 blocks and finishes: they stay cached, freed tail first (id 10 at the front of
    # the free queue). R1 needs 10 blocks: the 2 never-used blocks, then 8 of R0's (ids 10..3) are evicted; ids 1,
    # 2 stay on GPU. R2 hits ids 1, 2 on GPU; it may hit (160 - 1) // 16 = 9 ids, so ids 3..9 (7 blocks) come back
    # from the CPU tier: 144 hit tokens, 16 computed. Its TTFT = one step + reload of 7 blocks.
    step = 0.01
    cfg = dict(num_gpu_blocks=12, max_num_seqs=4, max_num_batched_tokens=512)
    off = simulate(three_requests(), cfg, ConstantStepCost(step))
    on = simulate(three_requests(), dict(cfg, offload=offload(100, write_policy=policy)), ConstantStepCost(step))
    assert off.requests.prefix_hit_tokens.tolist() == [0, 0, 32]
    assert on.requests.prefix_hit_tokens.tolist() == [0, 0, 144]
    assert on.offload.hit_entries == {"cpu": 7}
    ttft = on.requests.first_token_s - on.requests.arrival_s
    # 7 x 2,097,152 B / 55.63 GB/s = 0.263887 ms + 10 us = 0.273887 ms
    assert ttft.tolist() == pytest.approx([step, step, step + 2.73887e-4], rel=1e-5)
    assert on.offload.reload_s == pytest.approx(2.73887e-4, rel=1e-5)


def test_a_sessions_returning_turn_hits_the_cpu_tier_after_its_gpu_blocks_were_evicted():
    # sessions of 4 turns on a long first message (1,024 tokens) behind a shared 512-token system prompt; 20 s
    # thinking between turns; the GPU pool (400 blocks = 6,400 tokens) holds a few sessions' histories only
    wl = sessions(120, 4, 512, "fixed:64", "fixed:64", 20.0, rate_per_s=1.0, first_user="fixed:1024", seed=1)
    cfg = dict(num_gpu_blocks=400, max_num_seqs=16, max_num_batched_tokens=2048)
    cost = LinearStepCost(0.006, 3e-6, 4e-8)
    off = simulate(wl, cfg, cost)
    on = simulate(wl, dict(cfg, offload=offload(20_000)), cost)
    later = np.arange(120) % 4 > 0  # returning turns
    gained = on.requests.prefix_hit_tokens[later] - off.requests.prefix_hit_tokens[later]
    assert on.offload.hit_entries["cpu"] > 0 and (gained > 0).sum() > 10
    assert summary(on)["prefix_hit_rate"] > summary(off)["prefix_hit_rate"]


def test_hit_rate_is_non_decreasing_in_the_cpu_tier_size_on_the_same_trace():
    wl = sessions(120, 4, 512, "fixed:64", "fixed:64", 20.0, rate_per_s=1.0, first_user="fixed:1024", seed=2)
    cfg = dict(num_gpu_blocks=400, max_num_seqs=16, max_num_batched_tokens=2048)
    cost = LinearStepCost(0.006, 3e-6, 4e-8)
    rates = [summary(simulate(wl, cfg, cost))["prefix_hit_rate"]]
    rates += [summary(simulate(wl, dict(cfg, offload=offload(n)), cost))["prefix_hit_rate"] for n in (200, 1000, 4000)]
    assert rates == sorted(rates) and rates[-1] > rates[0]


def test_offload_off_gives_the_simulator_as_before_and_a_workload_without_prefix_ids_ignores_it():
    wl = sessions(60, 3, 256, "fixed:64", "fixed:64", 5.0, rate_per_s=1.0, first_user="fixed:512", seed=3)
    cfg = dict(num_gpu_blocks=300, max_num_seqs=16, max_num_batched_tokens=2048)
    a, b = (
        simulate(wl, cfg, LinearStepCost(0.006, 3e-6)),
        simulate(wl, dict(cfg, offload=None), LinearStepCost(0.006, 3e-6)),
    )
    assert a.offload is None
    # the same run on main before the tiers existed (6ca765f): end time, hit tokens, sum of first tokens, evictions
    assert (a.end_s, int(a.requests.prefix_hit_tokens.sum())) == (pytest.approx(41.22184754465523, rel=1e-12), 26272)
    assert (float(a.requests.first_token_s.sum()), a.num_evicted_blocks) == (pytest.approx(980.3962350630331), 1606)
    for f in ("first_token_s", "finish_s", "prefix_hit_tokens"):
        np.testing.assert_array_equal(getattr(a.requests, f), getattr(b.requests, f))
    # no prefix ids: nothing to offload, the same run with or without tiers
    plain = Workload(np.arange(20) * 0.1, np.full(20, 300), np.full(20, 20))
    c = simulate(plain, cfg, ConstantStepCost(0.01))
    d = simulate(plain, dict(cfg, offload=offload(1000)), ConstantStepCost(0.01))
    np.testing.assert_array_equal(c.requests.finish_s, d.requests.finish_s)
    assert d.offload is None


def test_littles_law_holds_with_offload_reloads():
    # L = lambda x W over a loaded session run whose reloads lengthen steps, within 2%
    wl = sessions(400, 4, 512, "fixed:64", "fixed:64", 5.0, rate_per_s=1.5, first_user="fixed:1024", seed=4)
    cfg = dict(num_gpu_blocks=400, max_num_seqs=16, max_num_batched_tokens=2048, offload=offload(4000))
    res = simulate(wl, cfg, LinearStepCost(0.006, 3e-6, 4e-8))
    assert res.offload.reload_s > 0
    mean_in_system = time_average(res, res.steps.num_running + res.steps.num_waiting)
    arrival_rate = wl.num_requests / res.end_s
    assert mean_in_system == pytest.approx(arrival_rate * latencies(res)["e2e_s"].mean(), rel=0.02)
    assert time_average(res, res.steps.num_waiting) > 0.05  # requests queue
