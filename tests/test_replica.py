"""ServerSettings (how one replica runs) and Replica (a scenario under those settings, derived values once)."""

import sys

import pytest

from planner.capacity.capacity_plan import capacity_plan
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve, with_engine
from planner.core.specs import Deployment
from planner.core.workload import TrafficSpec
from planner.latency.perf_model import PerfModel
from planner.memory.plan import plan_memory
from planner.sim.serving import Replica, run_serving
from planner.sim.settings import ServerSettings, SpecDecoding
from planner.traffic.generators import open_loop

R = resolve(Scenario(deployment=Deployment(max_num_seqs=64, max_num_batched_tokens=4096)))


def derivations(fn) -> dict[str, int]:
    """How many times `fn()` builds a memory plan and a step-time model (counted at the functions' entry)."""
    codes = {plan_memory.__code__: "memory plan", PerfModel.__init__.__code__: "step-time model"}
    counts = dict.fromkeys(codes.values(), 0)

    def count(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            counts[codes[frame.f_code]] += 1

    previous = sys.getprofile()
    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(previous)
    return counts


def test_settings_come_from_the_scenario():
    s = ServerSettings.of(R)
    assert (s.engine, s.max_num_seqs, s.max_num_batched_tokens, s.max_model_len) == (R.engine, 64, 4096, 131072)
    assert s.prefix_caching is True and s.max_queue is None and s.spec is None
    assert ServerSettings.of(with_engine(R, "tensorrt-llm")).engine.id == "tensorrt-llm"
    assert ServerSettings.of(R, prefix_caching=None).prefix_caching is True  # None keeps the deployment's
    with pytest.raises(InputError) as err:
        ServerSettings.of(R, max_queues=3)
    assert err.value.field == "max_queues"


def test_settings_reach_the_scheduler():
    spec = SpecDecoding("unsloth/Llama-3.2-1B-Instruct", k=3, alpha=0.7)
    replica = Replica(R, ServerSettings.of(R, max_num_seqs=32, max_queue=5, slo_ttft_s=0.5, seed=9, spec=spec))
    cfg = replica.scheduler_config
    assert (cfg.max_num_seqs, cfg.max_num_batched_tokens, cfg.max_queue, cfg.slo_ttft_s) == (32, 4096, 5, 0.5)
    assert (cfg.spec_k, cfg.spec_alpha) == (3, 0.7)
    assert replica.resolved.deployment.max_num_seqs == 32  # the memory plan sees the same limit
    assert replica.draft_cost.pm.resolved.model.name == "unsloth/Llama-3.2-1B-Instruct"
    res = run_serving(replica, open_loop(50, 5.0, "fixed:200", "fixed:20", seed=1))
    assert res.seed == 9 and res.config == cfg


def test_a_replica_derives_its_memory_plan_and_step_model_once():
    replica = Replica(R)
    wl = open_loop(40, 5.0, "fixed:200", "fixed:20", seed=1)
    counts = derivations(lambda: [run_serving(replica, wl) for _ in range(4)])
    assert counts == {"memory plan": 1, "step-time model": 1}
    # changing a setting that leaves the engine and limits alone keeps both
    assert derivations(lambda: run_serving(replica.with_settings(max_queue=3, seed=2), wl)) == {
        "memory plan": 0,
        "step-time model": 0,
    }


def test_one_capacity_plan_derives_the_memory_plan_once_and_the_step_model_once():
    # before Replica: 11 memory plans and 3 step-time models for this plan (8 probes, a saturation run, an
    # estimate and the operating point each derived their own); now the search shares one replica
    traffic = TrafficSpec(num_requests=600)
    counts = derivations(lambda: capacity_plan(Scenario(), 50, traffic))
    assert counts == {"memory plan": 1, "step-time model": 1}
