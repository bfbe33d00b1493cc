"""The fleet simulator and its routers: hand-countable routing, one replica = run_serving, Little's law."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.errors import InputError
from planner.sim.config import ConstantStepCost, LinearStepCost
from planner.sim.fleet import simulate_fleet
from planner.sim.fleet_summary import fleet_summary
from planner.sim.records import latencies
from planner.sim.router import (
    PrefixAwareWeights,
    ReplicaView,
    active_scores,
    prefix_aware,
    prefix_scores,
    queue_scores,
)
from planner.sim.simulator import simulate
from planner.traffic.generators import closed_loop, open_loop
from planner.traffic.sessions import sessions
from planner.traffic.workload import Workload

TEN_MS = ConstantStepCost(0.01)
POOL = dict(num_gpu_blocks=1000, block_size=16, max_num_seqs=8, max_num_batched_tokens=2048)
LOADED = dict(num_gpu_blocks=700, max_num_seqs=64, max_num_batched_tokens=2048)
LINEAR = LinearStepCost(0.006, 3e-6, 4e-8)


def six_requests() -> Workload:
    """Three replicas, six 48-token prompts (3 blocks of 16) at t = 0..5 s, prefixes A = [1, 2] and B = [3, 4]
    plus one private block each. Every output is 1000 tokens (10 s at 10 ms a step) except request 1's: 50
    tokens, so it is done by t = 1.5 s."""
    prefix = [[1, 2], [3, 4], [1, 2], [3, 4], [1, 2], [3, 4]]
    return Workload(
        np.arange(6, dtype=float),
        np.full(6, 48, dtype=np.int64),
        np.array([1000, 50, 1000, 1000, 1000, 1000], dtype=np.int64),
        tuple(np.array(p + [100 + i], dtype=np.int64) for i, p in enumerate(prefix)),
        16,
    )


@pytest.mark.parametrize(
    "router, expected, hit_tokens",
    [
        # k mod 3. Nobody meets its prefix: 0 (A), 3 (B) | 1 (B), 4 (A) | 2 (A), 5 (B).
        ("round-robin", [0, 1, 2, 0, 1, 2], 0),
        # outstanding at t=0..5: (0,0,0)->0; (1,0,0)->1; (1,0,0) (request 1 is done)->1; (1,1,0)->2;
        # (1,1,1)->0; (2,1,1)->1. Hits: 4 (A) after 0 on replica 0, 5 (B) after 1 on replica 1: 2 x 32 tokens.
        ("least-outstanding", [0, 1, 1, 2, 0, 1], 64),
        # KV blocks held at t (a request t s old holds ceil((48 + 100 t) / 16)): t=1: (10,0,0)->1;
        # t=2: (16,0,0)->1; t=3: (22,10,0)->2; t=4: (28,16,10)->2; t=5: (35,22,16+10)->1. Hit: 5 after 1.
        ("least-kv", [0, 1, 1, 2, 2, 1], 32),
        # score = 3 x prefix + 2 x queue + 2 x (1 - KV use) + 2 x active; nobody waits, so the queue term is 2
        # everywhere; active = (max - outstanding) / max (1 with none in flight) never outweighs a held prefix here.
        # 0: a tie -> 0. 1 (B): no B anywhere; replica 0's KV is in use -> 1. 2 (A): only 0 holds A -> 0.
        # 3 (B): 1 still caches request 1's B blocks -> 1. 4 (A) -> 0, 5 (B) -> 1. Hits: 2 to 5, 4 x 32.
        ("prefix-aware", [0, 1, 0, 1, 0, 1], 128),
    ],
)
def test_three_replicas_six_requests_two_prefixes_counted_by_hand(router, expected, hit_tokens):
    res = simulate_fleet(six_requests(), POOL, TEN_MS, 3, router)
    assert res.assignment.tolist() == expected
    assert int(res.fleet.requests.prefix_hit_tokens.sum()) == hit_tokens  # the shared 2 blocks = 32 tokens each
    s = fleet_summary(res)
    assert s.prefix_hit_rate == pytest.approx(hit_tokens / (6 * 48))
    assert [p.num_requests for p in s.per_replica] == np.bincount(expected, minlength=3).tolist()


def test_prefix_scores_follow_llm_d_normalisation():
    # llm-d: min-max over the replicas with >= 1 block; one holder scores 1, those holding nothing score 0
    views = [ReplicaView(0, 0, 0.0, b) for b in (0, 2, 6, 4)]
    assert prefix_scores(views) == [0.0, 0.0, 1.0, 0.5]
    assert prefix_scores([ReplicaView(0, 0, 0.0, b) for b in (0, 3)]) == [0.0, 1.0]
    assert queue_scores([ReplicaView(0, w, 0.0) for w in (4, 0, 2)]) == [0.0, 1.0, 0.5]


def test_prefix_aware_falls_back_to_least_outstanding_when_imbalanced():
    # sgl-router: imbalanced when max - min > 32 and max > 1.1 x min: 100 vs 30 (70 > 32, 100 > 33)
    hot = [ReplicaView(100, 90, 0.9, 8), ReplicaView(30, 0, 0.2, 0), ReplicaView(40, 0, 0.1, 0)]
    assert prefix_aware(hot) == 1
    # 60 vs 30 is only 30 apart (<= 32): balanced, the cached prefix wins
    warm = [ReplicaView(60, 0, 0.3, 8), ReplicaView(30, 0, 0.2, 0), ReplicaView(40, 0, 0.1, 0)]
    assert prefix_aware(warm) == 0
    # 64 vs 30 is 34 apart: imbalanced under sgl-router's library guard (32), balanced under its CLI's (64)
    warm[0] = ReplicaView(64, 0, 0.3, 8)
    assert prefix_aware(warm) == 1
    assert prefix_aware(warm, PrefixAwareWeights(balance_abs_threshold=64, balance_rel_threshold=1.5)) == 0
    # without the guard and the active-request scorer (the endpoint picker's published profile) the scores decide:
    # 3 x 1 + 2 x 0 + 2 x 0.1 = 3.2; 0 + 2 + 1.6 = 3.6; 0 + 2 + 1.8 = 3.8
    assert prefix_aware(hot, PrefixAwareWeights(balance_abs_threshold=1000, active=0.0)) == 2
    # the active-request scores (max - outstanding) / max: 0, 70/100, 60/100
    assert active_scores(hot) == [0.0, 0.7, 0.6]
    assert active_scores([ReplicaView(0, 0, 0.0)] * 2) == [1.0, 1.0]


@pytest.mark.parametrize("router", ["round-robin", "least-outstanding", "least-kv", "prefix-aware"])
@pytest.mark.parametrize("closed", [False, True])
def test_one_replica_fleet_is_run_serving_step_for_step(router, closed):
    shape = ("lognormal:mean=600,sigma=0.8", "lognormal:mean=120,sigma=0.8")
    wl = closed_loop(12, 600, 0.5, *shape, seed=3) if closed else open_loop(600, 14.0, *shape, seed=3)
    one = simulate(wl, LOADED, LINEAR, seed=3)
    fleet = simulate_fleet(wl, LOADED, LINEAR, 1, router, seed=3).replicas[0]
    for name in one.requests.__dataclass_fields__:
        assert np.array_equal(getattr(one.requests, name), getattr(fleet.requests, name), equal_nan=True), name
    for name in one.steps.__dataclass_fields__:
        assert np.array_equal(getattr(one.steps, name), getattr(fleet.steps, name)), name
    assert one.requests.num_preemptions.sum() > 0 or closed  # the open-loop run is loaded enough to preempt


def test_round_robin_replicas_are_single_replicas_of_their_share():
    # round robin decides without looking: replica k serves requests k, k+3, ... exactly as a lone replica would
    wl = open_loop(300, 30.0, "lognormal:mean=600,sigma=0.8", "fixed:80", seed=5)
    res = simulate_fleet(wl, LOADED, LINEAR, 3, "round-robin", seed=5)
    alone = simulate(wl.take(np.arange(1, 300, 3)), LOADED, LINEAR, seed=6)  # replica 1 draws with seed + 1
    np.testing.assert_array_equal(res.replicas[1].requests.finish_s, alone.requests.finish_s)


@pytest.mark.parametrize("router", ["round-robin", "least-outstanding", "prefix-aware"])
def test_littles_law_over_the_fleet(router):
    # L = lambda x W over the fleet: the time-average number running or waiting, summed over 4 replicas (step
    # records), against the arrival rate times the mean time in system (request records), within 2%.
    wl = open_loop(6000, 56.0, "lognormal:mean=600,sigma=0.8", "lognormal:mean=120,sigma=0.8", seed=1)
    res = simulate_fleet(wl, LOADED, LINEAR, 4, router, seed=1)
    arrival_rate = wl.num_requests / res.fleet.end_s
    mean_time_in_system = latencies(res.fleet)["e2e_s"].mean()
    assert res.mean_in_system == pytest.approx(arrival_rate * mean_time_in_system, rel=0.02)
    assert res.mean_in_system > 20  # about 10 per replica: a loaded fleet


def test_bad_fleet_input_names_the_field():
    wl = open_loop(10, 1.0, "fixed:10", "fixed:10")
    with pytest.raises(InputError) as err:
        simulate_fleet(wl, POOL, TEN_MS, 0)
    assert err.value.field == "replicas"
    with pytest.raises(InputError) as err:
        simulate_fleet(wl, POOL, TEN_MS, 2, "random")
    assert err.value.field == "router"


def shared_prompt_sessions() -> Workload:
    """Chat sessions of 3 turns behind one shared 2,000-token system prompt, 6 sessions/s (18 requests/s)."""
    return sessions(1800, 3, 2000, "lognormal:mean=200,sigma=0.6", "lognormal:mean=150,sigma=0.6", 5.0, 6.0, seed=1)


def test_prefix_aware_spreads_a_shared_prompt_and_beats_round_robin_on_hits():
    # 8 replicas, fair share 12.5%. With the defaults (sgl-router's library guard 32/1.1, llm-d's scorers with the
    # active-request scorer) the busiest replica takes at most 20% and the hit rate is above round robin's. The
    # endpoint picker's published profile (no active-request scorer) behind sgl-router's command-line guard
    # (64/1.5) sends every request to the one replica holding the prompt: nothing pushes back before 64.
    wl, pool = shared_prompt_sessions(), dict(LOADED, num_gpu_blocks=4000)
    rr = simulate_fleet(wl, pool, LINEAR, 8, "round-robin")
    pa = simulate_fleet(wl, pool, LINEAR, 8, "prefix-aware")
    published = PrefixAwareWeights(active=0.0, balance_abs_threshold=64, balance_rel_threshold=1.5)
    hot = simulate_fleet(wl, pool, LINEAR, 8, "prefix-aware", weights=published)
    share = lambda res: np.bincount(res.assignment, minlength=8).max() / wl.num_requests  # noqa: E731
    hits = lambda res: fleet_summary(res).prefix_hit_rate  # noqa: E731
    assert share(pa) <= 0.20
    assert hits(pa) >= hits(rr)
    assert share(hot) == 1.0
