"""The output stream's lag (EfficiencyProfile.first_token_lag_steps): every token reaches the client that many decode
steps late, so TTFT and end-to-end grow by lag × the request's TPOT and TPOT does not; counted by hand on a 1 s step."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel
from planner.sim.config import ConstantStepCost
from planner.sim.records import latencies
from planner.sim.simulator import simulate
from planner.traffic.workload import Workload


def _lat(lag: float):
    cfg = dict(num_gpu_blocks=100, block_size=16, max_num_seqs=4, max_num_batched_tokens=512,
               first_token_lag_steps=lag)  # fmt: skip
    wl = Workload(np.zeros(1), np.asarray([100]), np.asarray([5]))
    return latencies(simulate(wl, cfg, ConstantStepCost(1.0)))


def test_a_lag_of_two_steps_moves_the_first_and_last_token_not_the_gaps():
    # the prompt's step ends at t = 1 s (first token), four decode steps end at t = 5 s; TPOT 1 s. Two steps of lag:
    # the client sees the first token at 3 s and the last at 7 s, still 1 s apart
    none, lagged = _lat(0.0), _lat(2.0)
    assert (none["ttft_s"][0], none["e2e_s"][0], none["tpot_s"][0]) == (1.0, 5.0, 1.0)
    assert (lagged["ttft_s"][0], lagged["e2e_s"][0], lagged["tpot_s"][0]) == (3.0, 7.0, 1.0)


def test_a_one_token_reply_has_no_tpot_to_lag_by():
    cfg = dict(num_gpu_blocks=100, block_size=16, max_num_seqs=4, max_num_batched_tokens=512, first_token_lag_steps=3)
    wl = Workload(np.zeros(1), np.asarray([100]), np.asarray([1]))
    lat = latencies(simulate(wl, cfg, ConstantStepCost(1.0)))
    assert lat["ttft_s"][0] == 1.0 and np.isnan(lat["tpot_s"][0])


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
def test_the_serving_replica_carries_its_engines_fitted_lag(engine):
    from planner.sim.serving import Replica

    dep = Deployment(num_gpus=1, tensor_parallel_size=1)
    r = resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=dep, engine=engine))
    lag = PerfModel(r).eff.first_token_lag_steps
    assert lag > 0  # fitted on aiconfigurator's rows (data/efficiency.yaml)
    assert Replica(r).scheduler_config.first_token_lag_steps == lag
