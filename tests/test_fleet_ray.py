"""A fleet split into replicas run apart (planner/capacity/fleet_ray.py) is the fleet simulated together, field for
field: here one after the other, and on a local Ray instance (slow)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.capacity.fleet_ray import router_pass, run_fleet_apart
from planner.capacity.routing import run_fleet
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.sim.serving import Replica
from planner.traffic.generators import open_loop
from planner.traffic.sessions import sessions


@pytest.fixture(scope="module")
def replica():
    # Llama-3.1-8B on one H100 (the default scenario) with a small KV pool, so the replicas preempt and evict
    return Replica(resolve(Scenario())).with_settings(max_num_seqs=32)


def traffic():
    """600 requests at 40/s, prompts over a 64-token prefix shared by every third request (prefix ids)."""
    wl = open_loop(600, 40.0, "lognormal:mean=900,sigma=0.7", "lognormal:mean=150,sigma=0.7", seed=7)
    prefix = tuple(
        np.concatenate(([i % 3, 10 + i % 3, 20 + i % 3, 30 + i % 3], 1000 + 100 * i + np.arange(p // 16 - 4)))
        for i, p in enumerate(wl.prompt_tokens)
    )
    return dataclasses.replace(wl, prefix_ids=prefix, prefix_block_tokens=16)


def same(a, b) -> None:
    assert np.array_equal(a.assignment, b.assignment)
    assert a.router == b.router and a.mean_in_system == b.mean_in_system
    for x, y in zip((a.fleet, *a.replicas), (b.fleet, *b.replicas), strict=True):
        for name in x.requests.__dataclass_fields__:
            assert np.array_equal(getattr(x.requests, name), getattr(y.requests, name), equal_nan=True), name
        for name in x.steps.__dataclass_fields__:
            assert np.array_equal(getattr(x.steps, name), getattr(y.steps, name)), name
        assert (x.seed, x.end_s, x.peak_kv_blocks, x.num_evicted_blocks) == (
            y.seed,
            y.end_s,
            y.peak_kv_blocks,
            y.num_evicted_blocks,
        )


def test_round_robin_split_into_replicas_is_the_fleet(replica):
    wl = traffic()
    together = run_fleet(replica, wl, 4, "round-robin")
    assert together.fleet.requests.prefix_hit_tokens.sum() > 0
    same(run_fleet_apart(replica, wl, 4, "round-robin"), together)


def test_router_pass_is_arrival_order_mod_n():
    # open-loop arrivals are sorted; ties keep the index order, as the fleet's event heap pops (arrival, index)
    wl = open_loop(7, 1.0, "fixed:10", "fixed:10", seed=1)
    wl = dataclasses.replace(wl, arrival_s=np.array([0.0, 0.1, 0.1, 0.2, 0.2, 0.2, 0.9]))
    assert router_pass(wl, 3, "round-robin").tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert run_fleet(Replica(resolve(Scenario())), wl, 3, "round-robin").assignment.tolist() == [0, 1, 2, 0, 1, 2, 0]


@pytest.mark.parametrize("router", ["least-outstanding", "least-kv", "prefix-aware"])
def test_state_dependent_routers_refuse_to_split(router):
    with pytest.raises(InputError) as err:
        router_pass(open_loop(10, 1.0, "fixed:10", "fixed:10"), 2, router)
    assert err.value.field == "ray_address" and "replicas' state" in err.value.message


def test_closed_loop_traffic_refuses_to_split():
    wl = sessions(40, 4, 100, "fixed:50", "fixed:20", 1.0, rate_per_s=1.0)
    with pytest.raises(InputError) as err:
        router_pass(wl, 2, "round-robin")
    assert err.value.field == "ray_address" and "closed-loop" in err.value.message


@pytest.mark.slow
def test_round_robin_fleet_on_a_local_ray_is_the_local_fleet(replica):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra (pip install '.[cluster]')")
    from conftest import ROOT

    wl = traffic()
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}}
    )
    try:
        on_ray = run_fleet_apart(replica, wl, 4, "round-robin", address="auto")  # the session initialised above
    finally:
        ray.shutdown()
    same(on_ray, run_fleet(replica, wl, 4, "round-robin"))


def test_fleet_cli_refuses_ray_for_a_state_dependent_router_in_one_line(capsys):
    from planner.cli import main

    argv = "fleet --rate 4 --num-requests 50 --replicas 2 --router least-kv --ray local".split()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: --ray: the least-kv router decides"), err


@pytest.mark.slow
def test_fleet_cli_on_a_local_ray_prints_the_local_json(capsys):
    import json

    pytest.importorskip("ray", reason="Ray is an optional extra (pip install '.[cluster]')")
    from planner.cli import main

    argv = "fleet --rate 8 --num-requests 300 --input-tokens 700 --output-tokens 90 --replicas 3 --json".split()
    outs = []
    for extra in ([], ["--ray", "local"]):
        assert main(argv + extra) == 0
        out = json.loads(capsys.readouterr().out)
        out.pop("wall_s")  # the run's own seconds
        outs.append(out)
    assert outs[0] == outs[1]
    assert outs[0]["completed"] == 300 and len(outs[0]["per_replica"]) == 3
