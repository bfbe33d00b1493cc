"""planner.capacity.replicas: the search brackets and converges, more hardware never lowers capacity, replicas and cost
by hand, determinism."""

from __future__ import annotations

import math

import pytest

from planner.capacity.capacity_plan import capacity_plan
from planner.capacity.cost import cost_for, replicas_for
from planner.capacity.probe_workload import workload_at
from planner.capacity.replicas import bracket_and_bisect, find_capacity, traffic_replica
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.workload import SLO, TrafficSpec

TRAFFIC = TrafficSpec(profile="custom", prompt="fixed:1000", output="fixed:200", num_requests=600)
R = resolve(Scenario())  # Llama-3.1-8B BF16 on one H100-SXM


def test_bisection_on_a_step_function_brackets_then_converges_within_tolerance():
    calls = []

    def sustains(rate):  # true capacity 7.3 req/s
        calls.append(rate)
        return rate <= 7.3

    best = bracket_and_bisect(sustains, start=2.0, rel_tol=0.02)
    assert best <= 7.3 < best * 1.02
    assert calls[:4] == pytest.approx([2.0, 3.0, 4.5, 6.75])  # bracketing up ×1.5 until it fails at 10.125
    down = bracket_and_bisect(lambda x: x <= 7.3, start=40.0)  # from above: ÷2 until it sustains
    assert down <= 7.3 < down * 1.02
    assert bracket_and_bisect(lambda x: False, start=1.0) == 0.0  # out of reach at every load


def test_capacity_search_is_deterministic_and_converged():  # its speed: benchmarks/bench_capacity.py
    a = find_capacity(traffic_replica(R, TRAFFIC), TRAFFIC)
    b = find_capacity(traffic_replica(R, TRAFFIC), TRAFFIC)
    assert a.max_rate_per_replica == b.max_rate_per_replica > 0
    assert a.at_capacity.sustains
    failing_above = [p.rate_per_s for p in a.probes if not p.sustains and p.rate_per_s > a.max_rate_per_replica]
    assert min(failing_above) <= a.max_rate_per_replica * 1.02 + 1e-9  # bracket closed to 2%
    assert 0.3 < a.max_rate_per_replica / a.estimate_rps < 3  # the analytic estimate is a fair starting point


def test_common_random_numbers_only_the_rate_changes():
    w1, w2 = workload_at(TRAFFIC, 1.0), workload_at(TRAFFIC, 4.0)
    assert (w1.prompt_tokens == w2.prompt_tokens).all()
    assert w2.arrival_s == pytest.approx(w1.arrival_s / 4)


def test_tighter_slo_lowers_capacity_and_impossible_slo_gives_zero():
    loose = find_capacity(
        traffic_replica(R, TRAFFIC), TRAFFIC, SLO(ttft_p95_s=2.0, tpot_p95_s=0.1)
    ).max_rate_per_replica
    tight = find_capacity(
        traffic_replica(R, TRAFFIC), TRAFFIC, SLO(ttft_p95_s=2.0, tpot_p95_s=0.015)
    ).max_rate_per_replica
    assert tight < loose
    impossible = find_capacity(traffic_replica(R, TRAFFIC), TRAFFIC, SLO(ttft_p95_s=0.001))
    assert impossible.max_rate_per_replica == 0 and not impossible.feasible


@pytest.mark.parametrize("small,big", [("A100-40GB", "A100-80GB"), ("H100-SXM", "H200")])
def test_more_gpu_memory_or_bandwidth_never_lowers_capacity(small, big):
    """A100-80GB: 2x memory and 2,039 vs 1,555 GB/s; H200: 141 GB and 4.8 TB/s vs H100's 80 GB and 3.35 TB/s."""
    caps = [
        find_capacity(
            traffic_replica(resolve(Scenario(gpu=g, deployment={"max_model_len": 8192})), TRAFFIC), TRAFFIC
        ).max_rate_per_replica
        for g in (small, big)
    ]
    assert caps[1] >= caps[0] * 0.98  # within the search tolerance


def test_replicas_by_hand():
    assert replicas_for(50, 18.7, 1.2) == 4  # 50 × 1.2 / 18.7 = 3.21 → 4
    assert replicas_for(37.4, 18.7, 1.0) == 2  # exactly 2: no spurious extra replica from rounding
    assert replicas_for(1, 0.0) is None
    with pytest.raises(InputError, match="target"):
        replicas_for(0, 10)
    with pytest.raises(InputError, match="headroom"):
        replicas_for(10, 10, 0.5)


def test_cost_by_hand():
    """4 replicas × TP2 at $2.50/GPU-hour = $20/hour; 10 req/s × 200 output tokens × 3600 s = 7.2 M output
    tokens per hour → $20 / 7.2 = $2.778 per million; with 1,000-token prompts 43.2 M tokens → $0.463."""
    c = cost_for(10, 4, 2, 2.5, 1000, 200)
    assert (c.num_gpus, c.usd_per_hour, c.usd_per_day, c.gpu_hours_per_day) == (8, 20.0, 480.0, 192.0)
    assert c.usd_per_million_output_tokens == pytest.approx(20 / 7.2)
    assert c.usd_per_million_tokens == pytest.approx(20 / 43.2)


def test_capacity_plan_contract_and_price_override():
    plan = capacity_plan(Scenario(), 50, TRAFFIC, prices={"H100-SXM": 2.0})
    out = plan.to_dict()  # the `capacity --json` keys
    assert (plan.cost.replicas, plan.operating_point.sustains) == (out["replicas"], out["operating_point"]["sustains"])
    for key in ("max_rate_per_replica", "replicas", "usd_per_hour", "usd_per_million_output_tokens"):
        assert out[key] is not None
    assert out["replicas"] == math.ceil(50 * 1.2 / out["max_rate_per_replica"])
    assert out["usd_per_hour"] == pytest.approx(out["replicas"] * 2.0)
    assert out["operating_point"]["sustains"]
    default = capacity_plan(Scenario(), 50, TRAFFIC, operating_point=False)
    assert default.usd_per_gpu_hour == 2.69 and default.price_date == "2026-04" and default.operating_point is None
