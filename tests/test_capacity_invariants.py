"""Invariants of `capacity` as a user calls it (issue 56 item 2), for every engine on a dense model and for a MoE and
a hybrid (Mamba) model: the rate per replica is at most what `simulate` serves offline (every request at t=0); at
that rate a probe 5 × longer than capacity's own serves what is offered and meets the SLO; replicas never fall when
the target rate rises.

Tolerances, stated: served ≥ 95% of offered (planner.capacity.steady_state MAX_QUEUE_GROWTH, the queue trend the
steady-state test allows); the p95 TTFT / TPOT of the longer run within 10% of the SLO (capacity searches to
`rel_tol` on one seed's probe; a run 5 × longer draws other arrivals, and at the capacity rate the p95 sits at the
SLO by construction)."""

from __future__ import annotations

import json

import pytest

from planner.cli import main

SLO_TTFT, SLO_TPOT = 2.0, 0.1
LENGTHS = ["--input-tokens", "512", "--output-tokens", "128"]
DENSE = ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-SXM"]
MOE = ["--model", "Qwen/Qwen3-30B-A3B", "--gpu", "H100-SXM"]
HYBRID = ["--model", "nvidia/Nemotron-H-56B-Base-8K", "--gpu", "H100-SXM", "--tp", "2"]
CASES = [
    *[(f"dense-{e}", DENSE, e) for e in ("vllm", "sglang", "tensorrt-llm", "lmdeploy", "llama.cpp")],
    *[(f"moe-{e}", MOE, e) for e in ("vllm", "sglang", "tensorrt-llm")],
    *[(f"hybrid-{e}", HYBRID, e) for e in ("vllm", "sglang")],
]
# Known misses found by this test (issue 56 note), strict so they fail loudly the day capacity gets them right:
# SGLang's p95 TPOT in the 5x run is 0.117-0.122 s against the 0.1 s SLO (capacity's 1,000-odd-request probe sees a
# lower tail); TensorRT-LLM on Qwen3-30B-A3B answers 43.5 req/s where simulate serves 42.8 offline
KNOWN_MISSES = {
    "dense-sglang": "p95 TPOT 0.122 s at capacity over a 5x run (SLO 0.1 s)",
    "moe-tensorrt-llm": "capacity 43.5 req/s above the offline maximum 42.8",
    "hybrid-sglang": "p95 TPOT 0.117 s at capacity over a 5x run (SLO 0.1 s)",
}


def _case(name, scenario, engine):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[name])] if name in KNOWN_MISSES else []
    return pytest.param(scenario, engine, id=name, marks=marks)


def _json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _capacity(capsys, scenario, engine, target):
    slo = ["--slo-ttft-p95", str(SLO_TTFT), "--slo-tpot-p95", str(SLO_TPOT)]
    argv = ["capacity", *scenario, "--engine", engine, *LENGTHS, "--target-rate", str(target), *slo]
    return _json(capsys, [*argv, "--arrival", "poisson"])


def _simulate(capsys, scenario, engine, rate, num_requests):
    argv = ["simulate", *scenario, "--engine", engine, *LENGTHS, "--rate", repr(rate)]
    return _json(capsys, [*argv, "--num-requests", str(num_requests), "--arrival", "poisson"])


@pytest.mark.parametrize("scenario,engine", [_case(*c) for c in CASES])
def test_capacity_is_a_rate_simulate_sustains(capsys, scenario, engine):
    plan = _capacity(capsys, scenario, engine, 20)
    rate, simulated = plan["max_rate_per_replica"], plan["num_requests"]
    assert plan["feasible"] and rate > 0
    offline = _simulate(capsys, scenario, engine, 1e6, simulated)  # every request at t=0
    assert rate <= offline["throughput_requests_per_s"] * 1.001, (rate, offline["throughput_requests_per_s"])
    run = _simulate(capsys, scenario, engine, rate, 5 * simulated)
    assert run["served_requests_per_s"] >= 0.95 * run["offered_requests_per_s"], run["served_requests_per_s"]
    assert run["ttft_s"]["p95"] <= 1.10 * SLO_TTFT, run["ttft_s"]["p95"]
    assert run["tpot_s"]["p95"] <= 1.10 * SLO_TPOT, run["tpot_s"]["p95"]


def test_replicas_never_fall_when_the_target_rises(capsys):
    plans = [_capacity(capsys, DENSE, "vllm", target) for target in (5, 40, 80, 160)]
    replicas = [p["replicas"] for p in plans]
    assert replicas == sorted(replicas) and replicas[-1] > replicas[0], replicas
    # one replica's capacity is a property of the replica, not of the target
    assert len({round(p["max_rate_per_replica"], 6) for p in plans}) == 1
