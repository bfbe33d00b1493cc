"""Benchmark clients as the simulator runs them (planner.traffic.clients, planner.sim.serving.benchmark_clients): N
streams started together on an idle server, each next request sent when a reply ends, the client's warm-up left out
of the means (planner.sim.records.measured), lengths drawn around the nominal ones as the client draws them; and
`simulate --users N` without think time as those streams (`--client`, `--warmup-requests`, `--random-range-ratio`).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.cli import main
from planner.cli.scenario_args import resolved_from_args
from planner.cli.simulate_cmd import parse_simulate, run_inputs, simulate_argv
from planner.core.errors import InputError
from planner.latency.metrics import estimate
from planner.sim.config import LinearStepCost, scheduler_config
from planner.sim.records import latencies, measured, request_frame
from planner.sim.serving import CLIENT_TURNAROUND_S, run_serving
from planner.sim.simulator import simulate
from planner.traffic.clients import CLIENTS, DEFAULT_CLIENT, client_loop, get_client

LLAMA_8B = ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-SXM"]


def test_the_clients_and_their_defaults():
    assert set(CLIENTS) == {"vllm-bench", "sglang-bench", "genai-perf", "aiperf", "guidellm"}
    assert DEFAULT_CLIENT == "vllm-bench"
    assert get_client(" SGLang-Bench ") is CLIENTS["sglang-bench"]  # as a user types it
    with pytest.raises(InputError, match="unknown benchmark client 'locust'"):
        get_client("locust")
    # SGLang's bench_serving sends one warm-up request first (--warmup-requests 1); vllm bench serve none
    assert (CLIENTS["sglang-bench"].warmup_requests, CLIENTS["vllm-bench"].warmup_requests) == (1, 0)


def test_client_loop_starts_every_stream_together_and_marks_the_warmup():
    # 4 streams, 3 warm-up + 9 measured = 12 requests: the 4 first ones at t = turnaround, the other 8 sent as
    # replies end (NaN until the simulator fills them in); request j is stream j mod 4's
    wl = client_loop(CLIENTS["vllm-bench"], 4, 9, 0.25, "fixed:100", "fixed:10", seed=0, warmup_requests=3)
    assert wl.num_requests == 12
    assert wl.arrival_s[:4].tolist() == [0.25] * 4
    assert np.isnan(wl.arrival_s[4:]).all()
    assert wl.user_id.tolist() == [0, 1, 2, 3] * 3
    assert (wl.extra["warmup_requests"], wl.extra["client"]) == (3, "vllm-bench")
    # the client's own warm-up when none is given: SGLang's bench_serving sends 1 first
    assert client_loop(CLIENTS["sglang-bench"], 4, 8, 0.0, "fixed:100", "fixed:10").extra["warmup_requests"] == 1
    assert client_loop(CLIENTS["vllm-bench"], 4, 8, 0.0, "fixed:100", "fixed:10").num_requests == 8
    with pytest.raises(InputError, match="warmup_requests"):
        client_loop(CLIENTS["vllm-bench"], 4, 8, 0.0, "fixed:100", "fixed:10", warmup_requests=-1)


def test_latencies_leave_the_warmup_out():
    # a fixed-cost engine (10 ms a step + 10 µs a token), 4 streams, 4 warm-up + 8 measured: latencies() returns the
    # 8 measured requests, in id order, aligned with np.flatnonzero(finished & measured)
    cost = LinearStepCost(base_s=0.01, per_token_s=1e-5, per_kv_token_s=0.0)
    wl = client_loop(CLIENTS["sglang-bench"], 4, 8, 0.0, "fixed:100", "fixed:10", warmup_requests=4)
    res = simulate(wl, scheduler_config(num_gpu_blocks=1000), cost)
    r = res.requests
    assert r.finished.all() and len(r.arrival_s) == 12
    assert measured(res).tolist() == [False] * 4 + [True] * 8
    lat = latencies(res)
    assert all(len(v) == 8 for v in lat.values())
    kept = np.flatnonzero(r.finished & measured(res))
    assert kept.tolist() == list(range(4, 12))
    assert np.allclose(lat["ttft_s"], r.first_token_s[kept] - r.arrival_s[kept])
    # by hand: the 4 warm-up prompts start together, one step of 400 tokens = 10 + 4 ms, so each waits 14 ms
    assert np.allclose(r.first_token_s[:4] - r.arrival_s[:4], 0.014)
    df = request_frame(res)  # the per-request table leaves the warm-up rows' latencies empty
    assert df["ttft_s"][:4].isna().all() and df["ttft_s"][4:].notna().all()


def test_the_first_round_is_a_staircase_of_prefills_by_hand():
    # vLLM without chunked prefill, 1,500 tokens a step, Llama-3.1-8B on one H100: 4 streams of 1,024-token prompts
    # sent together take one prompt a step (two are 2,048 > 1,500), the k-th beside the k − 1 already decoding, so
    # the k-th first token comes after k steps: a staircase of prefills
    argv = [*LLAMA_8B, "--users", "4", "--num-requests", "4", "--input-tokens", "1024", "--output-tokens", "16"]
    argv += ["--enable-chunked-prefill", "false", "--max-num-batched-tokens", "1500"]
    replica, wl = run_inputs(argv)
    pm = replica.step_cost.pm
    assert wl.arrival_s.tolist() == pytest.approx([CLIENT_TURNAROUND_S + pm.request_path_s] * 4)
    res = run_serving(replica, wl)
    steps, r = res.steps, res.requests
    assert steps.new_tokens[:4].tolist() == [1024, 1025, 1026, 1027]  # one prompt + the k − 1 decodes
    assert steps.num_seqs[:4].tolist() == [1, 2, 3, 4]
    engine_ttft = r.first_token_s - r.arrival_s
    assert engine_ttft == pytest.approx(np.cumsum(steps.duration_s[:4]), rel=1e-9)  # request k: after step k
    # as the client measures them: the request path and the output stream's lag on top of the k steps; each step
    # within 5% of one prompt's prefill alone (PerfModel.prefill): the decodes beside it add little, and the
    # simulator prices a whole prompt's attention over its full square of pairs (planner/sim/step_execution.py:
    # new tokens × context), PerfModel.prefill over the causal half, +2.8% here
    lat = latencies(res)
    one = float(pm.prefill(1, 1024).total_s)
    steps_only = lat["ttft_s"] - pm.request_path_s - pm.eff.first_token_lag_steps * lat["tpot_s"]
    assert steps_only == pytest.approx(engine_ttft, rel=1e-9)
    for k in range(1, 5):
        assert steps_only[k - 1] == pytest.approx(k * one, rel=0.05)
    assert np.all(np.diff(steps_only) > 0.9 * one)  # each later prompt waits a whole prefill more


def test_littles_law_holds_for_the_closed_loop():
    # N = 8 streams always have a request in flight but for the turnaround: served requests per second × (mean time
    # a request takes + the turnaround) = N, over a steady window (the 2N-th to the (R − 2)N-th finish: ramp and
    # drain left out). Lengths spread (vllm bench serve --random-range-ratio 0.5) so the streams do not stay a wave
    n = 8
    argv = [*LLAMA_8B, "--users", str(n), "--num-requests", str(20 * n), "--input-tokens", "512"]
    argv += ["--output-tokens", "128", "--random-range-ratio", "0.5"]
    replica, wl = run_inputs(argv)
    res = run_serving(replica, wl)
    r = res.requests
    assert r.finished.all()
    done = np.sort(r.finish_s)
    lo, hi = done[2 * n], done[-2 * n]
    window = (r.finish_s > lo) & (r.finish_s <= hi)
    rate = window.sum() / (hi - lo)
    in_system = r.finish_s - r.arrival_s
    gap = CLIENT_TURNAROUND_S + replica.step_cost.pm.request_path_s
    assert rate * (np.mean(in_system[window]) + gap) == pytest.approx(n, rel=0.02)
    # as the client measures e2e (the frontend's hop and the stream's lag in it): within a few %
    e2e = latencies(res)["e2e_s"]  # no warm-up: aligned with the request ids
    assert rate * np.mean(e2e[window]) == pytest.approx(n, rel=0.03)


def _json(argv: list[str], capsys) -> dict:
    assert main(["simulate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_simulate_runs_the_named_clients_streams(capsys):
    out = _json(["--users", "4", "--client", "sglang-bench", "--input-tokens", "512", "--output-tokens", "64"], capsys)
    assert (out["client"], out["warmup_requests"]) == ("sglang-bench", 1)
    assert (out["clients_per_rank"], out["data_parallel_size"]) == (4, 1)
    assert out["num_requests"] == 1000 + 1  # bench_serving's default 1,000 prompts, after its warm-up request
    assert list(out)[-4:] == ["client", "warmup_requests", "clients_per_rank", "data_parallel_size"]  # appended
    # --users without think time is vllm bench serve's streams by default; with think time, people (no client)
    base = ["--users", "4", "--num-requests", "8", "--input-tokens", "512", "--output-tokens", "64"]
    assert _json(base, capsys)["client"] == "vllm-bench"
    people = _json([*base, "--think-time", "2"], capsys)
    assert (people["client"], people["warmup_requests"], people["clients_per_rank"]) == (None, 0, None)
    warm = _json([*base, "--warmup-requests", "4"], capsys)
    assert (warm["warmup_requests"], warm["num_requests"]) == (4, 4 + 8)


@pytest.mark.parametrize(
    "extra, flag",
    [
        (["--think-time", "2", "--client", "vllm-bench"], "--client"),
        (["--think-time", "2", "--warmup-requests", "1"], "--warmup-requests"),
        (["--random-range-ratio", "1.0"], "--random-range-ratio"),  # vllm-bench takes 0 <= r < 1
        (["--warmup-requests", "-1"], "--warmup-requests"),
    ],
)
def test_client_flags_out_of_place_are_errors_naming_the_flag(extra, flag, capsys):
    rc = main(["simulate", "--users", "4", "--num-requests", "8", *extra])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"error: {flag}:" in err and "Traceback" not in err


def test_random_range_ratio_draws_lengths_the_clients_way():
    # vllm bench serve: uniform in [L(1 − r), L(1 + r)]; SGLang's bench_serving: in [rL, L]
    assert CLIENTS["vllm-bench"].length_spec(1000, 0.5) == "uniform:500,1500"
    assert CLIENTS["sglang-bench"].length_spec(1000, 0.5) == "uniform:500,1000"
    assert CLIENTS["vllm-bench"].length_spec(1000) == "fixed:1000"  # its default r = 0
    # SGLang's default r = 0 draws from 1 to L (docs/research/benchmark_clients.md); r = 1 is every length L
    assert CLIENTS["sglang-bench"].length_spec(1000) == "uniform:1,1000"
    assert CLIENTS["sglang-bench"].length_spec(1000, 1.0) == "fixed:1000"
    base = [*LLAMA_8B, "--users", "4", "--num-requests", "400", "--input-tokens", "1000", "--output-tokens", "200"]
    _, wl = run_inputs([*base, "--random-range-ratio", "0.5"])
    p, o = wl.prompt_tokens, wl.output_tokens
    assert 500 <= p.min() < 550 and 1450 < p.max() <= 1500  # 400 draws reach both ends of [500, 1,500]
    assert 100 <= o.min() < 110 and 290 < o.max() <= 300
    _, wl = run_inputs([*base, "--client", "sglang-bench", "--random-range-ratio", "0.5"])
    assert 500 <= wl.prompt_tokens.min() < 550 and 950 < wl.prompt_tokens.max() <= 1000
    _, wl = run_inputs(base)
    assert set(wl.prompt_tokens.tolist()) == {1000} and set(wl.output_tokens.tolist()) == {200}


LONE = [
    pytest.param(["--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-SXM", "--engine", e], id=f"llama8b-{e}")
    for e in ("vllm", "sglang", "tensorrt-llm", "lmdeploy", "llama.cpp")
]
LONE += [
    pytest.param(["--model", "deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--tp", "8", "--engine", e], id=f"dsv3-{e}")
    for e in ("vllm", "sglang", "tensorrt-llm")
]
LONE.append(pytest.param(["--model", "Qwen/Qwen3-30B-A3B", "--gpu", "H100-SXM", "--engine", "vllm"], id="qwen3-moe"))


@pytest.mark.parametrize("scenario", LONE)
def test_estimate_at_batch_one_agrees_with_one_simulated_user(scenario):
    # one stream alone on the replica: its TTFT is the request path, one prefill and the output stream's lag,
    # which `estimate --batch 1` now charges as `simulate --users 1` does (planner.latency.metrics.request_path_s)
    argv = [*scenario, "--users", "1", "--num-requests", "3", "--input-tokens", "1024", "--output-tokens", "64"]
    out = simulate_argv(argv)
    est = estimate(resolved_from_args(parse_simulate(argv)), 1, 1024, 64)
    assert out["client"] == "vllm-bench" and out["num_requests"] == 3
    assert out["ttft_s"]["mean"] == pytest.approx(est.ttft_s, rel=0.02)
    assert out["tpot_s"]["mean"] == pytest.approx(est.tpot_s, rel=0.02)
