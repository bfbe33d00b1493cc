"""Benchmark clients as the simulator runs them: N closed-loop users that drifted apart (not a lockstep wave), each
next request reaching the engine during the step after the reply (planner.sim.serving.benchmark_clients)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.accuracy.aiconfigurator_rows import read_aiconfigurator
from planner.accuracy.bench_protocol import INFERENCEMAX
from planner.accuracy.serving_points import predict
from planner.core.paths import measurements_dir
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel
from planner.sim.records import latencies
from planner.sim.serving import CLIENT_TURNAROUND_S, Replica, benchmark_clients, drifted_start_s, run_serving
from planner.traffic.generators import closed_loop


def llama70b_on_two_h200():
    dep = Deployment(num_gpus=2, tensor_parallel_size=2, weights="fp8")
    return resolve(Scenario(model="meta-llama/Llama-3.1-70B", gpu="H200", deployment=dep))


CSV = measurements_dir() / "aiconfigurator" / "silicon_calibration.csv"


def measured_means(r, wl, users, settings=None):
    res = run_serving(Replica(r, settings), wl)
    lat = latencies(res)
    keep = np.flatnonzero(res.requests.finished) >= users  # first request of each user: warm-up
    return 1e3 * float(np.mean(lat["ttft_s"][keep])), 1e3 * float(np.nanmean(lat["tpot_s"][keep]))


def test_stagger_spreads_the_first_requests_evenly():
    wl = closed_loop(4, 12, 0.0, "fixed:10", "fixed:10", "fixed", stagger_s=2.0)
    assert list(wl.arrival_s[:4]) == [0.0, 0.5, 1.0, 1.5]  # user u starts u x 2 s / 4 later
    assert np.isnan(wl.arrival_s[4:]).all()  # later requests follow their user's replies


def test_the_spread_is_one_cycle_of_a_user_at_n_in_flight():
    # by hand: 1,023 decode steps at 4 in flight, the 4 users' prompts each beside the 3 others' decodes, and the
    # turnaround outside the steps
    r = llama70b_on_two_h200()
    pm = PerfModel(r)
    ctx = 1024 + 512
    prompt_beside = pm.step(3 + 1024, 4, 3 * ctx, 3 * (ctx + 1) + 1024 * 1025 / 2).total_s - pm.decode(3, ctx).total_s
    prompt_cost = prompt_beside + pm.request_overhead_s
    expected = 1023 * pm.decode(4, ctx).total_s + 4 * prompt_cost + CLIENT_TURNAROUND_S + pm.request_path_s
    assert drifted_start_s(r, 4, 1024, 1024) == pytest.approx(expected)
    assert 0 < prompt_cost < pm.prefill(1, 1024).total_s  # cheaper beside decodes than alone (one weight read)


def test_the_spread_is_the_cycle_the_clients_then_run():
    # 16 users of 1,024 / 128 tokens: a quarter of each cycle is the others' prompts, which the old spread (one
    # prefill + 127 decode steps) left out; the users' measured cycles (arrival to next arrival) match the spread
    r = llama70b_on_two_h200()
    users, n = 16, 64
    wl = benchmark_clients(r, users, n, "fixed:1024", "fixed:128")
    res = run_serving(Replica(r), wl)
    arrival = res.requests.arrival_s
    cycles = [np.diff(arrival[u::users])[1:] for u in range(users)]  # the drifted rounds (not the first)
    spread = drifted_start_s(r, users, 1024, 128)
    assert float(np.mean(cycles)) == pytest.approx(spread, rel=0.08)
    pm = PerfModel(r)
    old = pm.prefill(1, 1024).total_s + 127 * pm.decode(users, 1024 + 64).total_s
    assert spread > 1.15 * old


def test_drifted_clients_wait_for_one_prefill_not_a_wave():
    # aiconfigurator's split, vLLM on 2 x H200, Llama-3.1-70B FP8, 4 users, 1024/1024 tokens: mean TTFT 121.3 ms
    r = llama70b_on_two_h200()
    lockstep = closed_loop(4, 12, 0.0, "fixed:1024", "fixed:1024", "fixed")
    ttft_lockstep, _ = measured_means(r, lockstep, 4)
    ttft, tpot = measured_means(r, benchmark_clients(r, 4, 12, "fixed:1024", "fixed:1024"), 4)
    pm = PerfModel(r)
    front = pm.request_path_s * 1e3  # in every client-side TTFT: the frontend's hop and the prompt pass's dispatch
    wave = pm.prefill(4, 1024).total_s * 1e3  # lockstep: every TTFT is the whole wave's prefill
    assert ttft_lockstep - front == pytest.approx(wave, rel=0.1)
    assert ttft - front < 0.4 * (ttft_lockstep - front)
    # validate runs the row as its benchmark ran it (InferenceMAX's file: vLLM at max-num-batched-tokens 8,192,
    # lengths uniform in [819, 1,024], a burst of 4 counting 1/10; planner.accuracy.bench_protocol) and weighs the
    # spread and wave runs with vLLM's fitted wave_fraction (serving_points.predict): 137.5 ms (+13%) at this fit,
    # one row of the 2,528 (vLLM's median TTFT error: README)
    row = next(
        p for p in read_aiconfigurator(CSV.read_text()) if p.id.endswith("_vllm_fp8_agg_1024x1024_c4_tp2_ep1_913")
    )
    assert (row.protocol, row.preset, row.gpu_id, row.tp, row.ttft_ms) == (
        INFERENCEMAX,
        "meta-llama/Llama-3.1-70B",
        "H200",
        2,
        pytest.approx(121.29, abs=0.01),
    )
    assert predict(row).ttft_ms == pytest.approx(121.3, rel=0.35)
    # the turnaround puts the next request in the step after the reply: it waits for that step, then its prefill
    one_step = pm.decode(3, 1536).total_s * 1e3
    assert ttft >= pm.prefill(1, 1024).total_s * 1e3 + 0.5 * one_step
    assert CLIENT_TURNAROUND_S < one_step / 1e3
    assert tpot == pytest.approx(13.9, rel=0.2)  # measured mean TPOT 13.9 ms


def test_the_measured_rounds_run_at_n_in_flight_to_the_end():
    # a closed loop's last round drains: as its users finish nobody replaces them, so its requests decode beside ever
    # fewer others (64 users of 1,024 / 128 tokens: that round's TPOT is a third below the round before). A benchmark
    # measures 10-20 rounds and only its last drains; validate simulates one more round than it measures
    r = llama70b_on_two_h200()
    users = 64
    wl = benchmark_clients(r, users, 4 * users, "fixed:1024", "fixed:128")
    res = run_serving(Replica(r), wl)
    tpot = latencies(res)["tpot_s"]
    done = np.flatnonzero(res.requests.finished)
    by_round = [float(np.mean(tpot[(done >= k * users) & (done < (k + 1) * users)])) for k in range(4)]
    assert by_round[3] < 0.75 * by_round[2]  # the draining round
    assert by_round[2] == pytest.approx(by_round[1], rel=0.02)  # measured rounds 2 and 3: both at 64 in flight
    row = next(
        p for p in read_aiconfigurator(CSV.read_text()) if p.id.endswith("_vllm_fp8_agg_1024x1024_c4_tp2_ep1_913")
    )
    assert row.rounds == (4, 16, 4, 12)  # 4 clients: 1 warm-up round, 2 measured (requests 4-11), 1 trailing
