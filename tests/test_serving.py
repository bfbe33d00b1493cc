"""planner.sim.serving and planner.capacity.load_sweep: scenario -> scheduler + step cost, the summary contract, the
knee, traffic profiles, and open vs closed loop (the closed loop hides the queue)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from planner.capacity.load_sweep import find_knee, open_vs_closed, rate_sweep, users_for_rate
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel
from planner.memory.plan import plan_memory
from planner.sim.run_summary import result_summary, steady_rates
from planner.sim.serving import DecodeRunCost, Replica, run_serving, scheduler_config_for, step_cost_for
from planner.traffic.generators import open_loop
from planner.traffic.profiles import profile_workload, trace_window
from planner.traffic.traces import load_trace
from planner.traffic.workload import Workload

R = resolve(Scenario())  # Llama-3.1-8B on one H100-SXM
CONTRACT = {
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "queue_s",
    "throughput_tokens_per_s",
    "completed",
    "rejected",
    "preemptions",
    "prefix_hit_rate",
    "simulated_s",
}


def test_scheduler_config_comes_from_memory_plan_and_deployment():
    r = resolve(Scenario(deployment=Deployment(block_size=32, max_num_seqs=64, max_num_batched_tokens=4096)))
    cfg = scheduler_config_for(r, max_queue=10)
    assert cfg.num_gpu_blocks == plan_memory(r).num_gpu_blocks > 0
    assert (cfg.block_size, cfg.max_num_seqs, cfg.max_num_batched_tokens, cfg.max_queue) == (32, 64, 4096, 10)


@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B", "mistralai/Mixtral-8x7B-v0.1", "google/gemma-2-9b"])
def test_vectorised_decode_cost_equals_perf_model(model):
    """Dense, MoE (experts touched depend on the batch only) and sliding-window (falls back to PerfModel.step)."""
    r = resolve(Scenario(model=model, gpu="H100-SXM", deployment=Deployment(num_gpus=2, tensor_parallel_size=2)))
    cost = step_cost_for(r)
    ctx = np.array([0.0, 1.0, 17.0, 4_000.0, 250_000.0, 2e6])
    for n in (1, 8, 256):
        want = [PerfModel(r).step_time_s(n, n, c, c) for c in ctx]
        np.testing.assert_allclose(
            cost.step_times_s(n, n, ctx, ctx), want, rtol=1e-9
        )  # rounding of the affine split only


def test_one_request_alone_is_prefill_then_decode_steps():
    """100-token prompt, 3 output tokens, arrives at t=0: TTFT = one prefill step (it samples token 1), then two
    decode steps at contexts 101 and 102 (the simulator passes the context after each step's token)."""
    wl = Workload(np.array([0.0]), np.array([100]), np.array([3]))
    res = run_serving(Replica(R), wl)
    pm = PerfModel(R)
    # attention pairs: new tokens × context (simulator's count); the request's own cost comes with its first chunk
    prefill = pm.step_time_s(100, 1, 100, 100 * 100) + pm.request_overhead_s
    d1, d2 = pm.step_time_s(1, 1, 101, 101), pm.step_time_s(1, 1, 102, 102)
    s = result_summary(res)
    front = pm.request_path_s  # the client's TTFT and end-to-end include the request path (PerfModel), once
    # and the output stream's lag: every token reaches the client lag × TPOT late (EfficiencyProfile)
    late = pm.eff.first_token_lag_steps * (d1 + d2) / 2
    assert s.ttft_s.mean == pytest.approx(prefill + front + late)
    assert s.tpot_s.mean == pytest.approx((d1 + d2) / 2)
    assert s.e2e_s.p99 == pytest.approx(prefill + d1 + d2 + front + late)
    assert s.queue_s.p50 == 0.0 and s.completed == 1 and s.simulated_s == pytest.approx(prefill + d1 + d2)


def test_summary_has_contract_keys_and_is_strict_json():
    summary = result_summary(run_serving(Replica(R), open_loop(200, 5.0, "fixed:500", "fixed:50", seed=1)))
    s = summary.to_dict()
    assert CONTRACT <= set(s)
    for key in ("ttft_s", "tpot_s", "e2e_s", "queue_s"):
        assert set(s[key]) == {"mean", "p50", "p95", "p99"}
        assert s[key]["p50"] <= s[key]["p95"] <= s[key]["p99"]
    json.dumps(s, allow_nan=False)
    assert summary.completed == 200 and summary.rejected == 0 and summary.seed == 0


def test_queue_limit_rejects_under_overload_and_slo_sets_goodput():
    wl = open_loop(600, 200.0, "fixed:2000", "fixed:100", seed=0)  # far beyond one replica
    s = result_summary(run_serving(Replica(R).with_settings(max_queue=5, slo_ttft_s=0.5, slo_tpot_s=0.05), wl))
    assert s.rejected == s.rejected_queue_full > 0
    assert s.completed + s.rejected == 600
    assert s.goodput_requests_per_s <= s.throughput_requests_per_s


def test_steady_rates_show_an_overloaded_server_falling_behind():
    light = run_serving(Replica(R), open_loop(500, 2.0, "fixed:500", "fixed:100", seed=0))
    heavy = run_serving(Replica(R), open_loop(500, 100.0, "fixed:500", "fixed:400", seed=0))
    offered, served = steady_rates(light)
    assert served == pytest.approx(offered, rel=0.1)
    offered, served = steady_rates(heavy)
    assert served < 0.8 * offered


# --- the knee, on synthetic sweeps (verdicts chosen by hand) ------------------------------------------------
def _row(rate, sustains=True):
    return {"rate_per_s": rate, "sustains": sustains, "reason": "" if sustains else "p95 TTFT over"}


def test_knee_is_the_last_sustained_rate_of_the_healthy_run_and_sorts_rows():
    assert find_knee([_row(1), _row(2), _row(3), _row(4, False)])["rate_per_s"] == 3
    rows = [_row(5), _row(1), _row(3, False), _row(2)]  # rate 3 breaks the run; 5 never counts
    assert find_knee(rows)["rate_per_s"] == 2


def test_no_knee_when_the_lightest_load_already_fails():
    assert find_knee([_row(1, False), _row(2)]) is None
    assert find_knee([]) is None


def test_rate_sweep_reports_progress_and_latency_grows_with_load():
    calls = []
    rows = rate_sweep(
        Replica(R),
        [90.0, 2.0, 10.0],
        lambda x: open_loop(400, x, "fixed:1000", "fixed:200", seed=3),
        progress=lambda k, n: calls.append((k, n)),
    )
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert [row["rate_per_s"] for row in rows] == [2.0, 10.0, 90.0]
    assert rows[0]["ttft_p95_s"] < rows[-1]["ttft_p95_s"] and rows[0]["tpot_p95_s"] < rows[-1]["tpot_p95_s"]
    knee = find_knee(rows)
    assert knee is not None and knee["rate_per_s"] == 10.0
    assert not rows[-1]["sustains"] and rows[-1]["reason"]
    with pytest.raises(InputError):
        rate_sweep(Replica(R), [0.0], lambda x: None)


# --- traffic profiles ----------------------------------------------------------------------------------------
def test_trace_window_keeps_prefix_ids_and_sets_the_rate():
    moon = load_trace("mooncake")
    wl = trace_window(moon, 300, 2.0, seed=4, timing="trace")
    assert wl.num_requests == 300 and wl.prefix_ids is not None and wl.prefix_block_tokens == 512
    assert (wl.arrival_s[-1] - wl.arrival_s[0]) / 299 == pytest.approx(0.5)  # mean gap = 1 / rate
    again = trace_window(moon, 300, 2.0, seed=4)
    assert np.array_equal(again.prompt_tokens, wl.prompt_tokens)  # same seed, same window
    assert not np.array_equal(trace_window(moon, 300, 2.0, seed=5).prompt_tokens, wl.prompt_tokens)


def test_prefix_caching_hits_on_the_mooncake_profile():
    """Mooncake requests share 512-token prefix blocks: in this 1,000-request window 21.7% of prompt tokens repeat
    an earlier prefix (counted from hash_ids, unlimited cache), but one H100's pool holds only ~870 such blocks
    (~37 prompts), so LRU eviction leaves ~4% of hits."""
    wl = profile_workload("rag", 1000, 0.5, seed=0)
    cached = result_summary(run_serving(Replica(R).with_settings(prefix_caching=True), wl))
    plain = result_summary(run_serving(Replica(R).with_settings(prefix_caching=False), wl))
    assert 0.02 < cached.prefix_hit_rate < 0.217 and plain.prefix_hit_rate == 0.0
    assert cached.ttft_s.mean < plain.ttft_s.mean


def test_profile_workload_custom_and_errors():
    wl = profile_workload("custom", 500, 4.0, 7, prompt="uniform:10,20", output="fixed:5", arrival="gamma", cv=3.0)
    assert wl.num_requests == 500 and wl.prompt_tokens.min() >= 10 and set(wl.output_tokens) == {5}
    with pytest.raises(InputError, match="profile"):
        profile_workload("nope", 10, 1.0)
    with pytest.raises(InputError, match="trace"):
        profile_workload("upload", 10, 1.0)


# --- open vs closed loop -------------------------------------------------------------------------------------
def test_users_sized_by_littles_law():
    assert users_for_rate(10.0, 5.0, 1.0) == 60  # 10 req/s × (5 s think + 1 s reply)
    assert users_for_rate(0.01, 1.0, 1.0) == 1


def test_closed_loop_hides_the_queue_open_loop_builds_near_saturation():
    # near this replica's saturation (~26-27 req/s of this traffic since the family corrections on 6 rows per
    # stratum; 22 before): the open loop's p95 queue 0.169 s and 7 waiting at most, the closed loop's 0.073 s and 1
    out = open_vs_closed(Replica(R), 26.0, 1500, "empirical:azure_conv", "empirical:azure_conv", think_time_s=5.0)
    op, cl = out.open, out.closed
    assert out.num_users == math.ceil(26.0 * (5.0 + out.single_reply_s))
    assert cl.queue_s.p95 < op.queue_s.p95
    assert cl.max_waiting < op.max_waiting
    assert cl.offered_requests_per_s < op.offered_requests_per_s  # the users slowed down with the server


def test_decode_run_cost_is_a_step_cost():
    from planner.latency.perf_model import StepCost

    assert isinstance(step_cost_for(R), StepCost) and isinstance(step_cost_for(R), DecodeRunCost)
