"""Property tests (hypothesis) over the replica simulator (planner.sim.simulator) and its traffic
(planner.traffic.generators).

For any workload and scheduler configuration: every request is finished or rejected, never both, never lost;
the tokens computed equal the prompts + outputs − prefix hits + recomputation (conservation); KV blocks, running
requests and the per-step token budget stay within their limits; each request's timeline is ordered
(arrival ≤ scheduled < first token ≤ finish); p50 ≤ p95 ≤ p99; the same seed gives the same run.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.core.errors import InputError
from planner.sim.config import LinearStepCost, scheduler_config
from planner.sim.records import REJECT_NONE, summary
from planner.sim.simulator import simulate
from planner.traffic.generators import closed_loop, open_loop

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

lengths = st.one_of(
    st.integers(1, 600).map(lambda n: f"fixed:{n}"),
    st.tuples(st.integers(1, 300), st.integers(0, 600)).map(lambda t: f"uniform:{t[0]},{t[0] + t[1]}"),
    st.tuples(st.integers(1, 400), st.floats(0, 1.5)).map(lambda t: f"lognormal:mean={t[0]},sigma={t[1]:.2f},max=2000"),
)


@st.composite
def workloads(draw):
    n, seed = draw(st.integers(1, 60)), draw(st.integers(0, 2**31 - 1))
    if draw(st.booleans()):
        return open_loop(
            n,
            draw(st.floats(0.1, 200)),
            draw(lengths),
            draw(lengths),
            draw(st.sampled_from(["poisson", "gamma", "constant"])),
            draw(st.floats(0.2, 4)),
            seed=seed,
        )
    return closed_loop(draw(st.integers(1, 20)), n, draw(st.floats(0, 5)), draw(lengths), draw(lengths), seed=seed)


@st.composite
def configs(draw, spec: bool = True):
    seqs = draw(st.integers(1, 64))
    cfg = dict(
        num_gpu_blocks=draw(st.integers(1, 400)),
        block_size=draw(st.sampled_from([1, 4, 16, 32])),
        max_num_seqs=seqs,
        max_num_batched_tokens=draw(st.integers(seqs, 4096)),
        enable_chunked_prefill=draw(st.booleans()),
        max_queue=draw(st.none() | st.integers(0, 30)),
        enable_prefix_caching=draw(st.booleans()),
        admission_policy=draw(st.sampled_from(["vllm-v1", "vllm-v1", "guaranteed-no-evict", "sglang", "static-slots"])),
        long_prefill_token_threshold=draw(st.sampled_from([0, 0, 1, 7, 64])),
        scheduler_reserve_full_isl=draw(st.booleans()),
        max_blocks_per_request=draw(st.none() | st.none() | st.integers(1, 50)),
        max_model_len=draw(st.none() | st.integers(1, 3000)),
    )
    if spec and draw(st.booleans()):
        cfg.update(
            spec_k=draw(st.integers(1, 6)), spec_alpha=draw(st.floats(0, 1)), spec_draft_cost_s=draw(st.floats(0, 1e-3))
        )
    return scheduler_config(cfg)


costs = st.builds(LinearStepCost, st.floats(1e-4, 0.05), st.floats(0, 1e-4), st.floats(0, 1e-6), st.floats(0, 1e-9))


def check_timelines(res) -> None:
    r, s, cfg = res.requests, res.steps, res.config
    done, rejected = r.finished, r.rejected != REJECT_NONE
    assert not (done & rejected).any(), "a request both finished and was rejected"
    assert (done | rejected).all(), f"{int((~done & ~rejected).sum())} requests neither finished nor rejected"
    assert (r.first_scheduled_s[done] >= r.arrival_s[done] - 1e-9).all()
    assert (r.first_token_s[done] > r.first_scheduled_s[done]).all()
    assert (r.finish_s[done] >= r.first_token_s[done]).all()
    if len(s):
        assert s.kv_blocks.max() <= cfg.num_gpu_blocks and res.peak_kv_blocks <= cfg.num_gpu_blocks
        assert s.num_running.max() <= cfg.max_num_seqs and s.num_seqs.max() <= cfg.max_num_seqs
        assert (s.duration_s > 0).all() and (np.diff(s.time_s) > 0).all()
        assert res.end_s >= s.time_s[-1]


@SETTINGS
@given(workloads(), configs(spec=False), costs, st.integers(0, 1000))
def test_requests_and_tokens_conserved(wl, cfg, cost, seed):
    try:
        res = simulate(wl, cfg, cost, seed=seed)
    except InputError as err:
        assert err.field  # e.g. a prefix block that is not a whole number of KV blocks
        return
    check_timelines(res)
    r, s = res.requests, res.steps
    done = r.finished
    assert s.new_tokens.max(initial=0) <= cfg.max_num_batched_tokens
    computed = (r.prompt_tokens + r.output_tokens - 1 - r.prefix_hit_tokens + r.recomputed_tokens)[done].sum()
    partial = r.recomputed_tokens[~done].sum()  # rejected requests never ran, so they computed nothing
    assert partial == 0
    assert int(s.new_tokens.sum()) == int(computed)


@SETTINGS
@given(workloads(), configs(spec=True), costs, st.integers(0, 1000))
def test_percentiles_ordered_and_summary_finite(wl, cfg, cost, seed):
    res = simulate(wl, cfg, cost, seed=seed)
    check_timelines(res)
    out = summary(res)
    assert out["num_finished"] + out["num_rejected"] == wl.num_requests
    for name in ("queue_wait", "ttft", "tpot", "e2e"):
        p50, p95, p99 = (out[f"{name}_p{p}_s"] for p in (50, 95, 99))
        if not math.isnan(p50):
            assert p50 <= p95 <= p99, (name, p50, p95, p99)
            assert out[f"{name}_p50_s"] >= 0
    if out["num_finished"]:
        assert out["ttft_p50_s"] >= out["queue_wait_p50_s"] - 1e-12  # TTFT = wait + prefill
        assert out["throughput_tokens_per_s"] > 0


@settings(max_examples=25, deadline=None)
@given(workloads(), configs(spec=True), costs, st.integers(0, 1000))
def test_same_seed_same_run(wl, cfg, cost, seed):
    a, b = simulate(wl, cfg, cost, seed=seed), simulate(wl, cfg, cost, seed=seed)
    for name in ("first_scheduled_s", "first_token_s", "finish_s", "rejected", "num_preemptions"):
        assert np.array_equal(getattr(a.requests, name), getattr(b.requests, name), equal_nan=True), name
    assert np.array_equal(a.steps.new_tokens, b.steps.new_tokens)


@SETTINGS
@given(
    st.integers(1, 50),
    st.floats(-1e3, 1e3) | st.just(float("nan")) | st.just(float("inf")),
    st.text(max_size=20),
    st.text(max_size=20),
)
def test_traffic_inputs_raise_only_input_errors(n, rate, prompt, output):
    try:
        open_loop(n, rate, prompt or "fixed:1", output or "fixed:1")
    except InputError as err:
        assert err.field in ("rate_per_s", "prompt", "output", "num_requests", "process", "cv"), err.field


# --- the step cost the simulator runs on (planner.latency.perf_model): physics of batching ----------------------------


@st.composite
def perf_models(draw):
    from planner.core.catalog import gpus, model_presets
    from planner.core.scenario import Scenario, resolve
    from planner.core.specs import Deployment
    from planner.latency.perf_model import PerfModel

    weights = draw(st.sampled_from(["bf16", "fp16", "fp8", "int8", "awq-int4", "q4_k_m"]))
    scenario = Scenario(
        model=draw(st.sampled_from(sorted(model_presets()))),
        gpu=draw(st.sampled_from(sorted(gpus()))),
        deployment=Deployment(weights=weights, max_model_len=8192),
    )
    return PerfModel(resolve(scenario))


BATCHES = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]


@settings(max_examples=40, deadline=None)
@given(perf_models(), st.integers(1, 8000), st.integers(2, 2000))
def test_tpot_never_falls_and_throughput_rises_until_compute_bound(pm, input_tokens, output_tokens):
    from planner.latency.metrics import sweep

    s = sweep(pm, BATCHES, input_tokens, output_tokens)
    tpot, thr = s["tpot_s"], s["throughput_tokens_per_s"]
    assert (np.diff(tpot) >= -1e-12 * tpot[1:]).all(), f"TPOT falls as the batch grows: {tpot}"
    memory_bound = s["bound"] == "memory"
    last = int(np.argmin(memory_bound)) if not memory_bound.all() else len(BATCHES)  # first compute-bound batch
    rising = thr[:last]
    assert (np.diff(rising) >= -1e-9 * rising[1:]).all(), f"throughput falls before the compute bound: {rising}"
    assert (s["ttft_s"] > 0).all() and (tpot > 0).all()
