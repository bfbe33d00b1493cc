"""Capacity under a router (planner/capacity/fleet_capacity.py): the search counted by hand, prefix-aware routing
never dearer than round robin on traffic that shares prefixes, and the routers agreeing when nothing is shared."""

from __future__ import annotations

import json

import pytest

from planner.capacity.fleet_capacity import MAX_FLEET_REQUESTS, gallop_smallest, routing_plan
from planner.cli import main
from planner.core.scenario import Scenario, resolve
from planner.core.workload import SLO, TrafficSpec
from planner.sim.router import ROUTERS


def _searched(start, need, max_replicas=64, max_probes=10):
    seen = []

    def meets(n):
        seen.append(n)
        return n >= need

    return gallop_smallest(meets, start, max_replicas, max_probes), seen


def test_gallop_from_the_one_replica_count_counted_by_hand():
    # right start: 11 holds, 10 does not -> 2 fleet runs
    assert _searched(11, 11) == (11, [11, 10])
    # start 12 holds; gallop down 11 (holds), 11-2 = 9 (fails); bisect 9..11: 10 (fails) -> 11
    assert _searched(12, 11) == (11, [12, 11, 9, 10])
    # start 4 fails; gallop up 5, 7, 11 (holds); bisect 7..11: 9, 10 (fail) -> 11
    assert _searched(4, 11) == (11, [4, 5, 7, 11, 9, 10])
    # a fleet of one holds: 1 is the answer after one run
    assert _searched(1, 1) == (1, [1])
    # never within max_replicas: 3, 4, 6, 8 (max) all fail
    assert _searched(3, 100, max_replicas=8) == (None, [3, 4, 6, 8])
    # the budget: 2 runs cannot bracket 11 from 4
    assert _searched(4, 11, max_probes=2)[0] is None


# A shared 2,000-token system prompt and 3-turn sessions (each turn re-sends the history): at 80 req/s x 1.2 on
# Llama-3.1-8B / H100 one replica sustains 25.8 req/s (p95 TPOT <= 20 ms), so one-replica sizing says 4.
SESSIONS = TrafficSpec(
    profile="custom",
    prompt="fixed:200",
    output="fixed:150",
    turns=3,
    system_prompt_tokens=2000,
    think_time_s=2.0,
    first_input="fixed:500",
    num_requests=600,
)
SLO_20MS = SLO(ttft_p95_s=0.2, tpot_p95_s=0.02)


@pytest.mark.slow  # four fleet searches of 2,400 requests: about a minute of CPU
def test_prefix_aware_never_needs_more_replicas_than_round_robin_on_shared_prompts():
    r = resolve(Scenario())
    plan = routing_plan(r, 80.0, SESSIONS, SLO_20MS, 1.2, "prefix-aware", 4, routers=("round-robin", "prefix-aware"))
    rr, aware = plan.size_of("round-robin"), plan.size_of("prefix-aware")
    assert plan.fleet_rate == pytest.approx(96.0)  # target x headroom
    assert plan.num_requests == min(600 * 4, MAX_FLEET_REQUESTS) == 2400  # 600 per replica of the start
    assert aware.replicas is not None and rr.replicas is not None
    assert aware.replicas <= rr.replicas
    # round robin scatters a session's turns: its history is cached on another replica
    assert aware.at_size.prefix_hit_rate > rr.at_size.prefix_hit_rate
    row = {x["router"]: x for x in plan.rows()}
    assert row["prefix-aware"]["replicas_saved_vs_round_robin"] == rr.replicas - aware.replicas
    assert row["prefix-aware"]["usd_per_hour"] == pytest.approx(aware.replicas * r.gpu.usd_per_hour)
    assert plan.to_dict()["replicas"] == aware.replicas


@pytest.mark.slow  # every router's search
def test_routers_agree_within_one_replica_without_shared_prefixes():
    r = resolve(Scenario())
    traffic = TrafficSpec(profile="custom", prompt="fixed:1000", output="fixed:200", num_requests=400)
    slo = SLO(ttft_p95_s=0.5, tpot_p95_s=0.03)
    plan = routing_plan(r, 30.0, traffic, slo, 1.2, "round-robin", 2)
    counts = [z.replicas for z in plan.sizes]
    assert None not in counts
    assert max(counts) - min(counts) <= 1, counts


def test_capacity_json_adds_routing_and_keeps_its_keys(capsys):
    base = "capacity --target-rate 5 --input-tokens 500 --output-tokens 100 --num-requests 200 --json".split()
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["routing"] is None and plain["spec_method"] is None
    assert main([*base, "--router", "least-outstanding"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(plain) == list(out)  # same keys, same order
    routing = out["routing"]
    assert routing["router"] == "least-outstanding"
    assert [p["router"] for p in routing["policies"]] == list(ROUTERS)
    for key in ("replicas", "ttft_p95_s", "tpot_p95_s", "prefix_hit_rate", "usd_per_hour"):
        assert key in routing["policies"][0]


def test_capacity_session_flags_need_custom_lengths(capsys):
    argv = "capacity --target-rate 5 --profile chat --turns 3 --think-time 1".split()
    assert main(argv) == 2
    assert "--turns" in capsys.readouterr().err


RECOMMEND = (
    "recommend --target-rate 20 --gpus H100-SXM,A100-80GB --precisions bf16,fp8 --tps 1 --num-requests 200 "
    "--workers 1 --json"
)


def test_recommend_rows_get_band_keys_and_the_top_rows_a_fleet_under_the_router(capsys):
    assert main([*RECOMMEND.split(), "--router", "prefix-aware"]) == 0
    rows = json.loads(capsys.readouterr().out)["options"]
    searched = [row for row in rows if row["feasible"] and row.get("searched") is not False]
    assert searched
    for row in searched:
        b = row["bands"]["max_rate_per_replica"]
        assert b["low"] <= row["max_rate_per_replica"] <= b["high"]
        assert row["replicas_pessimistic"] >= row["replicas"]
        assert isinstance(row["slo_holds_at_band_high"], bool)
    routed = [row for row in rows if row["router"] == "prefix-aware"]
    assert routed == searched[:3]  # ROUTED_TOP, in rank order
    for row in routed:  # no shared prefixes: the fleet agrees with one-replica sizing within one replica
        assert abs(row["fleet_replicas"] - row["replicas"]) <= 1
        assert row["fleet_usd_per_hour"] == pytest.approx(row["fleet_replicas"] * row["usd_per_gpu_hour"])
    assert all(row["router"] is None for row in rows if row not in routed)


def test_a_session_run_that_cannot_offer_its_rate_does_not_sustain_it(capsys):
    # 200 turns of 3-turn sessions with 1 s think times: ~67 sessions; at high rates they all start at once and
    # then wait on their users, so the steady window sees less than 80% of the rate: the search stops there
    argv = (
        "capacity --target-rate 10 --input-tokens 300 --output-tokens 100 --turns 3 --think-time 1 "
        "--system-prompt-tokens 1000 --num-requests 200 --json"
    ).split()
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    short = [p for p in out["probes"] if p["reason"].startswith("the sessions offer only")]
    # probes now run enough sessions to fill the running batch (probe_workload.probe_size), so few or none are short
    assert all(p["rate_per_s"] > out["max_rate_per_replica"] for p in short)
    assert out["num_requests"] > 200 // 3 and out["probe_sizing"]
    assert out["max_rate_per_replica"] < 100  # 49.6 with sized probes, not ~740
