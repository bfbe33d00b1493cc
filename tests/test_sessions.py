"""Traffic that comes back: sessions re-send their history, and the prefix cache and the router see it."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.errors import InputError
from planner.sim.config import ConstantStepCost, LinearStepCost
from planner.sim.fleet import simulate_fleet
from planner.sim.fleet_summary import fleet_summary
from planner.sim.simulator import simulate
from planner.traffic.sessions import SESSION_ID_STRIDE, session_prefix_ids, sessions

POOL = dict(num_gpu_blocks=100, max_num_seqs=8, max_num_batched_tokens=512)
LOADED = dict(num_gpu_blocks=2000, max_num_seqs=64, max_num_batched_tokens=2048)
LINEAR = LinearStepCost(0.006, 3e-6, 4e-8)


def test_each_turn_re_sends_the_last_prompt_and_answer():
    # system 40, u = 100 then 30, 30; answers 50: prompts 40 + 100 = 140; 140 + 50 + 30 = 220; 220 + 50 + 30 = 300
    wl = sessions(3, 3, 40, "fixed:30", "fixed:50", 1.0, num_users=1, first_user="fixed:100")
    assert wl.prompt_tokens.tolist() == [140, 220, 300]
    assert wl.prefix_covers_output
    # ids over prompt + answer, 16-token blocks: 190 // 16 = 11, 270 // 16 = 16, 350 // 16 = 21
    assert [len(p) for p in wl.prefix_ids] == [11, 16, 21]
    assert wl.prefix_ids[2][:16].tolist() == wl.prefix_ids[1].tolist()  # turn 3 starts with turn 2's blocks
    # blocks 0 and 1 (tokens 0..31) lie inside the 40-token system prompt: shared ids; block 2 straddles it
    assert session_prefix_ids(0, 48, 40)[:2].tolist() == [0, 1]
    assert session_prefix_ids(0, 48, 40)[2] == SESSION_ID_STRIDE + 2
    assert session_prefix_ids(5, 48, 40)[:2].tolist() == [0, 1]  # every session shares them


def test_second_turn_hits_the_first_turns_blocks_counted_by_hand():
    # One session: turn 1 = 100-token message, 50-token answer; turn 2 = 100 + 50 + 30 = 180 tokens.
    # Turn 1 caches its prompt's 6 full blocks during prefill and, as it finishes holding 149 computed tokens,
    # the answer's: 149 // 16 = 9 blocks. Turn 2 may hit at most (180 - 1) // 16 = 11: it hits all 9 = 144 tokens.
    wl = sessions(2, 2, 0, "fixed:30", "fixed:50", 1.0, num_users=1, first_user="fixed:100")
    res = simulate(wl, POOL, ConstantStepCost(0.01))
    assert res.requests.prefix_hit_tokens.tolist() == [0, 144]
    # turn 2 arrives a think time after turn 1's answer
    assert res.requests.arrival_s[1] == pytest.approx(res.requests.finish_s[0] + wl.think_s[1])


def test_a_sessions_second_turn_hits_on_the_same_replica_under_prefix_aware_routing():
    # 3 replicas, 20 sessions of 2 turns, no shared system prompt: the prefix-aware router sends every second
    # turn where its first turn ran, and it hits its whole first turn (prompt + answer) there; round robin does
    # not (a session's turns are not consecutive arrivals).
    wl = sessions(40, 2, 0, "fixed:64", "fixed:64", 2.0, rate_per_s=1.0, first_user="fixed:256", seed=1)
    first, second = np.arange(0, 40, 2), np.arange(1, 40, 2)
    aware = simulate_fleet(wl, LOADED, LINEAR, 3, "prefix-aware", seed=1)
    assert aware.assignment[second].tolist() == aware.assignment[first].tolist()
    # (256 + 64 - 1) // 16 = 19 full blocks of turn 1 = 304 tokens each
    assert aware.fleet.requests.prefix_hit_tokens[second].tolist() == [304] * 20
    rr = simulate_fleet(wl, LOADED, LINEAR, 3, "round-robin", seed=1)
    assert fleet_summary(rr).prefix_hit_rate < fleet_summary(aware).prefix_hit_rate


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_prefix_aware_is_never_worse_than_round_robin_on_hit_rate(seed):
    # a shared 1,024-token system prompt and 4-turn sessions on 4 replicas
    wl = sessions(
        600, 4, 1024, "lognormal:mean=200,sigma=0.5", "lognormal:mean=150,sigma=0.5", 3.0, rate_per_s=2.0, seed=seed
    )
    hit = {
        r: fleet_summary(simulate_fleet(wl, LOADED, LINEAR, 4, r, seed=seed)).prefix_hit_rate
        for r in ("round-robin", "prefix-aware")
    }
    assert hit["prefix-aware"] >= hit["round-robin"] > 0


def test_sessions_closed_loop_users_run_sessions_back_to_back():
    wl = sessions(12, 3, 0, "fixed:10", "fixed:10", 0.5, num_users=2, seed=0)
    # 4 sessions over 2 users: sessions 0, 2 belong to user 0 and 1, 3 to user 1; only the first turns of
    # sessions 0 and 1 have arrival times, the simulator times the rest
    assert wl.user_id.tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1]
    assert np.flatnonzero(~np.isnan(wl.arrival_s)).tolist() == [0, 3]
    res = simulate(wl, POOL, ConstantStepCost(0.01))
    assert res.requests.finished.all()


def test_bad_session_input_names_the_field():
    with pytest.raises(InputError) as err:
        sessions(10, 0, 0, "fixed:10", "fixed:10", 1.0, rate_per_s=1.0)
    assert err.value.field == "turns"
    with pytest.raises(InputError) as err:
        sessions(10, 2, 0, "fixed:10", "fixed:10", 1.0)
    assert err.value.field == "rate_per_s"


@pytest.mark.parametrize("closed", [False, True])
def test_one_replica_fleet_replays_sessions_as_the_simulator_does(closed):
    loop = dict(num_users=10) if closed else dict(rate_per_s=2.0)
    wl = sessions(200, 4, 512, "lognormal:mean=200,sigma=0.5", "lognormal:mean=100,sigma=0.5", 1.0, seed=4, **loop)
    cfg = dict(num_gpu_blocks=900, max_num_seqs=32, max_num_batched_tokens=2048)
    one = simulate(wl, cfg, LINEAR, seed=2)
    fleet = simulate_fleet(wl, cfg, LINEAR, 1, "prefix-aware", seed=2).replicas[0]
    for name in one.requests.__dataclass_fields__:
        assert np.array_equal(getattr(one.requests, name), getattr(fleet.requests, name), equal_nan=True), name
    assert one.requests.prefix_hit_tokens.sum() > 0
