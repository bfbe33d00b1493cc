"""Pipeline parallelism as engines run it (issue 56): PP engine iterations in flight, each a pass over its own
requests, every request advancing one token per round (planner.latency.parallel module note,
planner.sim.serving DecodeRunCost)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency import parallel
from planner.latency.perf_model import PerfModel
from planner.sim.serving import DecodeRunCost, Replica, run_serving, scheduler_config_for
from planner.traffic.generators import open_loop

BIG = "meta-llama/Llama-3.1-405B"


def _resolved(tp, pp=1, model=BIG, gpu="H200", **dep):
    d = Deployment(weights="fp8", max_model_len=4096, num_gpus=tp * pp, tensor_parallel_size=tp,
                   pipeline_parallel_size=pp, **dep)  # fmt: skip
    return resolve(Scenario(model=model, gpu=gpu, deployment=d))


def test_stage_factor_and_batches_in_flight_by_hand():
    assert parallel.stage_factor(2, 126) == 1.0  # 63 + 63 layers
    assert parallel.stage_factor(4, 126) == pytest.approx(4 * 32 / 126)  # 32, 32, 31, 31: the first stages set it
    assert parallel.stage_factor(1, 80) == 1.0
    assert parallel.batches_in_flight(2, 1) == 1 and parallel.batches_in_flight(2, 7) == 2
    assert parallel.batches_in_flight(4, 0) == 1
    assert list(parallel.batches_in_flight(4, np.array([1.0, 3.0, 9.0]))) == [1.0, 3.0, 4.0]


def test_a_round_is_one_pass_over_half_the_batch_and_one_sequence_pays_the_whole_pass():
    r = _resolved(4, 2)
    pm, cost = PerfModel(r), DecodeRunCost(PerfModel(r))
    # 256 decoding sequences of 1,000 context tokens: two iterations of 128 in flight
    assert cost.step_time_s(256, 256, 256_000, 256_256) == pytest.approx(pm.step_time_s(128, 128, 128_000, 128_128))
    # one sequence: nothing to overlap with, the sum of the stages
    assert cost.step_time_s(1, 1, 1000, 1001) == pytest.approx(pm.step_time_s(1, 1, 1000, 1001))
    # the vectorised run of decode steps prices the same rounds as the scalar path
    ctx = np.array([256_000.0, 300_000.0])
    runs = cost.step_times_s(256, 256, ctx, ctx)
    assert runs == pytest.approx([cost.step_time_s(256, 256, c, c) for c in ctx], rel=1e-9)
    # without PP nothing changes
    r1 = _resolved(8)
    assert DecodeRunCost(PerfModel(r1)).step_time_s(256, 256, 256_000, 256_000) == PerfModel(r1).step_time_s(
        256, 256, 256_000, 256_000
    )


def test_each_iteration_in_flight_has_its_own_token_budget():
    cfg = scheduler_config_for(_resolved(4, 2, max_num_batched_tokens=8192))
    assert cfg.max_num_batched_tokens == 8192 and cfg.iterations_per_step == 2 and cfg.step_token_budget == 16384
    assert (
        scheduler_config_for(_resolved(8)).step_token_budget
        == scheduler_config_for(_resolved(8)).max_num_batched_tokens
    )


def _saturated_tokens_per_s(r) -> float:
    wl = open_loop(600, 1e6, prompt="fixed:200", output="fixed:1000", seed=0)
    res = run_serving(Replica(r), wl)
    done = res.requests.finished
    return float(res.requests.output_tokens[done].sum() / res.requests.finish_s[done].max())


def test_pp2_at_saturation_delivers_more_than_one_and_a_half_tp4_groups():
    # issue 56's done-when: Llama-3.1-405B FP8 on 8 × H200, TP 4 × PP 2 against TP 4 on 4 GPUs, everything at once
    tp4, pp2 = _saturated_tokens_per_s(_resolved(4)), _saturated_tokens_per_s(_resolved(4, 2))
    assert pp2 >= 1.6 * tp4
    assert pp2 <= 4.0 * tp4  # two stage groups, and PP2 also holds ~6x the KV (weights split over 8 GPUs)
