"""planner.capacity.recommend: candidates, ranking by cost, the Pareto frontier, parallel == serial."""

from __future__ import annotations

from planner.capacity.candidates import candidates, default_weights
from planner.capacity.ranking import pareto_front, rank
from planner.capacity.recommend import recommend, run_tasks, tasks_for
from planner.core.catalog import gpus
from planner.core.scenario import Scenario
from planner.core.workload import TrafficSpec


def without_timing(rows: list[dict]) -> list[dict]:
    """Rows minus the wall-clock field (the only one that may differ between runs)."""
    return [{k: v for k, v in r.items() if k != "search_wall_s"} for r in rows]


SMALL = TrafficSpec(profile="custom", prompt="fixed:500", output="fixed:100", num_requests=200)


def test_at_least_40_candidates_for_llama_8b_all_startable():
    cands = candidates(Scenario())
    assert len(cands) >= 40
    assert len({(c.gpu, c.deployment.weights, c.deployment.tensor_parallel_size) for c in cands}) == len(cands)
    assert all(c.deployment.num_gpus == c.deployment.tensor_parallel_size for c in cands)
    t4 = {c.deployment.weights for c in cands if c.gpu == "T4"}
    assert "bf16" not in t4 and "fp16" in t4  # Turing has no BF16
    assert "fp8" not in {c.deployment.weights for c in cands if c.gpu == "A100-80GB"}  # nor FP8 on Ampere


def test_default_weights_follow_the_gpu():
    g = gpus()
    assert default_weights(g["H100-SXM"]) == ["bf16", "fp8", "awq-int4"]
    assert default_weights(g["T4"]) == ["fp16", "awq-int4"]


def test_70b_drops_what_does_not_fit():
    cands = candidates(Scenario(model="meta-llama/Llama-3.1-70B"), gpu_ids=["H100-SXM"])
    assert {(c.deployment.weights, c.deployment.tensor_parallel_size) for c in cands} >= {
        ("bf16", 4),
        ("bf16", 8),
        ("fp8", 2),
    }
    assert ("bf16", 1) not in {(c.deployment.weights, c.deployment.tensor_parallel_size) for c in cands}


def test_pareto_front_on_a_hand_made_set():
    #            cost  latency
    points = [
        (1.0, 9.0),  # cheapest: on the front
        (2.0, 5.0),  # on
        (3.0, 5.0),  # dominated by (2, 5): same latency, dearer
        (2.5, 6.0),  # dominated by (2, 5)
        (4.0, 1.0),  # fastest: on
        (4.0, 1.0),
    ]  # a duplicate is not dominated (not strictly worse)
    assert pareto_front(points) == [True, True, False, False, True, True]


def test_rank_sorts_feasible_by_cost_then_infeasible():
    rows = [
        {"id": "c", "feasible": True, "usd_per_hour": 5.0, "usd_per_million_output_tokens_at_capacity": 1.0},
        {"id": "x", "feasible": False, "usd_per_hour": None},
        {"id": "a", "feasible": True, "usd_per_hour": 2.0, "usd_per_million_output_tokens_at_capacity": 0.9},
        {"id": "b", "feasible": True, "usd_per_hour": 2.0, "usd_per_million_output_tokens_at_capacity": 0.5},
    ]
    assert [r["id"] for r in rank(rows)] == ["b", "a", "c", "x"]
    assert [r["rank"] for r in rank(rows)] == [1, 2, 3, 4]


def test_parallel_equals_serial_and_ranking_is_sorted_by_cost():
    tasks = tasks_for(Scenario(), 20, SMALL, gpu_ids=["H100-SXM", "L40S"], tps=(1, 2))
    serial = run_tasks(tasks, workers=1)
    parallel = run_tasks(tasks, workers=2)
    assert without_timing(serial) == without_timing(parallel)
    rows = recommend(Scenario(), 20, SMALL, gpu_ids=["H100-SXM", "L40S"], tps=(1, 2), workers=2)
    costs = [r["usd_per_hour"] for r in rows if r["feasible"]]
    assert costs == sorted(costs) and len(rows) == len(tasks)
    assert any(r["pareto"] for r in rows)


def test_bounded_ranking_keeps_the_exact_top_two_and_says_what_it_skipped():
    kw = dict(gpu_ids=["H100-SXM", "L40S", "A10G"], tps=(1, 2), workers=1)
    full = recommend(Scenario(), 20, SMALL, prune=False, **kw)
    fast = recommend(Scenario(), 20, SMALL, **kw)
    assert len(fast) == len(full)
    assert without_timing(fast[:2]) == [{**r, "pareto": f["pareto"]} for r, f in zip(without_timing(full[:2]), fast)]
    skipped = [r for r in fast if r.get("searched") is False]
    assert skipped, "nothing was ruled out by its bound"
    runner_up = fast[1]["usd_per_hour"]
    for r in skipped:  # each one provably dearer than the runner-up: its lower bound is above it ...
        assert r["usd_per_hour_lower_bound"] > runner_up and "not searched" in r["reason"]
        exact = next(f for f in full if f["id"] == r["id"])  # ... and the exhaustive search agrees
        assert not exact["feasible"] or exact["usd_per_hour"] >= r["usd_per_hour_lower_bound"]
        assert r["max_rate_upper_bound"] is None or exact["max_rate_per_replica"] <= r["max_rate_upper_bound"]


def test_a_ranked_row_is_the_capacity_plan_of_that_deployment():
    from planner.capacity.capacity_plan import capacity_plan
    from planner.core.scenario import with_deployment

    rows = recommend(Scenario(), 20, SMALL, gpu_ids=["L40S"], weights=["fp8"], tps=(1, 2), workers=1)
    best = rows[0]
    plan = capacity_plan(with_deployment(Scenario(), best["gpu"], best["weights"], best["tp"]), 20, SMALL)
    assert (best["max_rate_per_replica"], best["replicas"], best["usd_per_hour"]) == (
        plan.max_rate_per_replica,
        plan.cost.replicas,
        plan.cost.usd_per_hour,
    )
    assert best["ttft_p95_s"] == plan.operating_point.ttft_p95_s


def test_a_deployment_whose_price_alone_is_above_the_runner_up_is_never_run():
    # one replica of H100 TP 8 costs 8 GPU-hours: above the runner-up of this small catalogue, so it is not even
    # bounded by a saturation run; the top two stay what the exhaustive ranking (prune=False) gives, serial or not
    # (in parallel, work started before the runner-up was known may bound or search a few more)
    kw = dict(gpu_ids=["H100-SXM", "L40S"], weights=["fp8"], tps=(1, 2, 4, 8))
    full = recommend(Scenario(), 20, SMALL, prune=False, workers=1, **kw)
    serial = recommend(Scenario(), 20, SMALL, workers=1, **kw)
    parallel = recommend(Scenario(), 20, SMALL, workers=2, **kw)
    assert without_timing(serial[:2]) == without_timing(parallel[:2])
    assert sorted(r["id"] for r in serial) == sorted(r["id"] for r in parallel)
    assert [r["id"] for r in serial[:2]] == [r["id"] for r in full[:2]]
    assert [r["usd_per_hour"] for r in serial[:2]] == [r["usd_per_hour"] for r in full[:2]]
    by_price = [r for r in serial if r.get("bound_run") is False]
    assert "H100-SXM · fp8 · TP8" in {r["id"] for r in by_price}
    for r in by_price:  # one replica's price, above the runner-up: a bound that needs no run
        assert (
            r["usd_per_hour_lower_bound"] == r["gpus_per_replica"] * r["usd_per_gpu_hour"] > serial[1]["usd_per_hour"]
        )
        assert r["saturated_rps"] is None and "one replica" in r["reason"]


def test_no_candidate_fits_advice_that_can_work():
    # issue 56 #5: DeepSeek-V3 FP8 (673 GB of weights) on 1 × H100 (80 GB) fits no candidate; "try a larger GPU or
    # a lower max_model_len" offered a change that cannot help weights that alone fill the GPU
    import pytest

    from planner.capacity.recommend import recommend
    from planner.core.errors import InputError
    from planner.core.scenario import Scenario

    with pytest.raises(InputError) as err:
        recommend(Scenario(model="deepseek-ai/DeepSeek-V3"), 1.0, gpu_ids=["H100-SXM"], weights=["fp8"], tps=(1,))
    assert "lower-precision weights" in err.value.message and "more GPUs per replica" in err.value.message
