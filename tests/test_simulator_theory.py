"""The simulator against queueing theory, on long seeded runs."""

from __future__ import annotations

import numpy as np
import pytest

from planner.sim.config import ConstantStepCost, LinearStepCost
from planner.sim.records import latencies, summary, time_average
from planner.sim.simulator import simulate
from planner.traffic.generators import open_loop
from planner.traffic.workload import Workload


@pytest.mark.parametrize("seed", [1, 2])
def test_littles_law_on_a_long_run(seed):
    # L = lambda x W: the time-average number in the system (from the step records) against the arrival rate
    # times the mean time in system (from the request records), within 2%. The pool (700 blocks) is small
    # enough that requests queue and get preempted.
    wl = open_loop(20_000, 14.0, "lognormal:mean=600,sigma=0.8", "lognormal:mean=120,sigma=0.8", seed=seed)
    res = simulate(
        wl,
        dict(num_gpu_blocks=700, max_num_seqs=64, max_num_batched_tokens=2048),
        LinearStepCost(0.006, 3e-6, 4e-8),
        seed=seed,
    )
    steps = res.steps
    mean_in_system = time_average(res, steps.num_running + steps.num_waiting)
    arrival_rate = len(wl.arrival_s) / res.end_s
    mean_time_in_system = latencies(res)["e2e_s"].mean()
    assert mean_in_system == pytest.approx(arrival_rate * mean_time_in_system, rel=0.02)
    assert mean_in_system > 10 and time_average(res, steps.num_waiting) > 1  # a loaded server
    assert res.requests.num_preemptions.sum() > 0


def test_md1_queue_wait():
    # One server (max_num_seqs=1), every request one 1-token step of D = 1 s: M/D/1 with rho = 0.7.
    # Pollaczek-Khinchine: Wq = rho x D / (2 (1 - rho)) = 1.1667 s; TTFT = Wq + D.
    rho, service_s = 0.7, 1.0
    wl = open_loop(150_000, rho / service_s, "fixed:1", "fixed:1", seed=4)
    res = simulate(wl, dict(num_gpu_blocks=10, max_num_seqs=1), ConstantStepCost(service_s))
    expected_wait_s = rho * service_s / (2 * (1 - rho))
    s = summary(res)
    assert s["queue_wait_mean_s"] == pytest.approx(expected_wait_s, rel=0.04)
    assert s["ttft_mean_s"] == pytest.approx(expected_wait_s + service_s, rel=0.03)
    assert res.steps.duration_s.sum() == pytest.approx(150_000 * service_s)  # one step per request


def test_utilisation_matches_offered_load():
    # Busy fraction of a constant-step single server = rho (here 0.5).
    wl = open_loop(50_000, 0.5, "fixed:1", "fixed:1", seed=9)
    res = simulate(wl, dict(num_gpu_blocks=10, max_num_seqs=1), ConstantStepCost(1.0))
    assert res.steps.duration_s.sum() / res.end_s == pytest.approx(0.5, rel=0.02)


def test_continuous_batching_primer_example():
    # primer §6: six requests at step 0 needing 2, 8, 4, 3, 5, 2 tokens on 3 slots, prefill ignored, every step
    # the same cost -> continuous batching done at step 9, average wait 11/6 steps. Here a 1-token prompt's
    # prefill step also makes the first token, so "needs n tokens" = n steps and the timeline is the same.
    wl = Workload(np.zeros(6), np.ones(6, dtype=np.int64), np.array([2, 8, 4, 3, 5, 2]))
    res = simulate(wl, dict(num_gpu_blocks=100, max_num_seqs=3), ConstantStepCost(1.0))
    assert res.end_s == 9
    assert latencies(res)["queue_wait_s"].mean() == pytest.approx(11 / 6)
