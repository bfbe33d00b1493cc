"""The simulator's two ways of planning a run of decode steps (plain Python for short runs, numpy for long ones,
planner/sim/lockstep.py) and its step recorder's flushes give the same numbers to the last bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.core.scenario import Scenario, resolve
from planner.sim.config import ConstantStepCost, LinearStepCost
from planner.sim.lockstep import MAX_FAST_FORWARD_STEPS, DecodeBatch, _plan_numpy, plan_decode_run
from planner.sim.records import StepRecorder
from planner.sim.serving import step_cost_for

COSTS = {
    "perf_model": step_cost_for(resolve(Scenario())),  # Llama-3.1-8B on one H100-SXM: decode_affine
    "linear": LinearStepCost(0.01, 2e-5, 1e-6, 1e-9),  # decode_step_fn
    "constant": ConstantStepCost(0.02),
}


def _batch() -> DecodeBatch:
    batch = DecodeBatch(8, 16, None)
    for i, (computed, output) in enumerate([(100, 40), (517, 30), (33, 25), (2048, 60), (900, 50)]):
        batch.join(i, computed, 1, output, 0)
    return batch


@pytest.mark.parametrize("cost", COSTS)
@pytest.mark.parametrize("free_blocks, arrival", [(10**6, math.inf), (7, math.inf), (10**6, 0.2), (3, 0.05)])
def test_the_python_and_numpy_plans_agree_to_the_bit(cost, free_blocks, arrival):
    batch, c = _batch(), COSTS[cost]
    m = int(min(batch.next_finish_step() + 1, batch.next_cap_step(), MAX_FAST_FORWARD_STEPS))
    fast = plan_decode_run(batch, 0, free_blocks, 1.5, 1.5 + arrival, c)
    slow = _plan_numpy(batch, 0, m, free_blocks, 1.5, 1.5 + arrival, c)
    assert len(fast[0]) > 0
    for a, b in zip(fast, slow):
        assert np.asarray(a).tolist() == np.asarray(b).tolist()


def test_flushing_the_step_recorder_often_or_once_gives_the_same_columns():
    rng = np.random.default_rng(0)
    small, large = StepRecorder(capacity=4), StepRecorder()
    small.FLUSH_ROWS = 5
    for _ in range(60):
        if rng.random() < 0.5:
            row = (float(rng.random()), float(rng.random()), 3, 4, int(rng.integers(10)), int(rng.integers(99)), 7)
            small.add(*row)
            large.add(*row)
        else:
            m = int(rng.integers(1, 9))
            run = (rng.random(m).tolist(), rng.random(m).tolist(), 5, 6, 40, np.cumsum(rng.integers(0, 3, m)).tolist())
            small.add_run(*run)
            large.add_run(*run)
    a, b = small.finish(), large.finish()
    for name in StepRecorder.FIELDS:
        assert getattr(a, name).tolist() == getattr(b, name).tolist()
    assert (a.num_waiting[a.new_tokens == 5] == 0).all() and len(a) > 60
