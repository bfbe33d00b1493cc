"""Continuous batching at concurrency B (planner.sim.continuous): what vllm bench serve --max-concurrency B
measures. Checks: B = 1 is the single request alone; the closed loop against a long open simulation of the same
scheduler; mixed steps slow decodes; max_num_seqs binds; bad input names the flag."""

from __future__ import annotations

import pytest

from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.latency.metrics import estimate
from planner.latency.perf_model import PerfModel
from planner.sim.continuous import continuous

R = resolve(Scenario(gpu="A100-80GB", deployment=Deployment(max_model_len=8192)))  # Llama-3.1-8B, BF16


def test_one_client_is_the_request_alone():
    c = continuous(R, 1, 2000, 300)
    pm = PerfModel(R)
    # TTFT = the request path + one prefill pass of 2,000 tokens (the whole prompt fits the 8,192-token budget)
    # + the output stream's lag (first_token_lag_steps decode steps), no queue; the simulator's step reads a little
    # more for the prompt's attention than PerfModel.prefill and pays request_overhead_s (4.6% at this fit)
    front = pm.request_path_s  # the frontend's hop and the prompt pass's host dispatch
    lag = pm.eff.first_token_lag_steps * c.tpot_s
    assert c.ttft_s - front - lag == pytest.approx(pm.prefill(1, 2000).total_s, rel=0.09)
    assert c.ttft_p95_s == pytest.approx(c.ttft_s)
    # TPOT = the static batch-1 TPOT (the same decode steps, nothing else running)
    assert c.tpot_s == pytest.approx(estimate(R, 1, 2000, 300).tpot_s, rel=1e-3)
    assert c.requests_per_s == pytest.approx(1 / c.e2e_s)
    assert c.throughput_tokens_per_s == pytest.approx(300 / c.e2e_s)


def test_prefill_chunks_slow_the_decodes_and_ttft_is_not_a_whole_batch_prefill():
    static, cont = estimate(R, 32, 2000, 300), continuous(R, 32, 2000, 300)
    assert cont.tpot_s > static.tpot_s  # decode steps carry other requests' prompt chunks
    # static TTFT prefills all 32 prompts (64,000 tokens); continuous prefills a few at a time
    assert cont.ttft_s < static.ttft_s / 4
    # the same work (32 prefills + 32 × 299 decode tokens) at about the same rate
    assert cont.throughput_tokens_per_s == pytest.approx(static.throughput_tokens_per_s, rel=0.25)
    assert 28 <= cont.mean_running <= 32


def test_throughput_rises_then_saturates():
    t = [continuous(R, b, 2000, 300).throughput_tokens_per_s for b in (1, 8, 32, 128)]
    assert t[0] < t[1] < t[2] < t[3]
    assert t[3] / t[2] < t[1] / t[0]  # diminishing returns past the ridge


def test_replicas_multiply_throughput():
    r2 = resolve(Scenario(gpu="A100-80GB", deployment=Deployment(num_gpus=2, max_model_len=8192)))
    one, two = continuous(R, 16, 1000, 200), continuous(r2, 16, 1000, 200)
    assert two.throughput_tokens_per_s == pytest.approx(2 * one.throughput_tokens_per_s)
    assert two.tpot_s == pytest.approx(one.tpot_s)


def test_max_num_seqs_binds_and_says_so():
    r = resolve(Scenario(gpu="A100-80GB", deployment=Deployment(max_model_len=8192, max_num_seqs=16)))
    c = continuous(r, 32, 1000, 200)
    assert c.capped_by_max_num_seqs and c.mean_running <= 16 + 1e-9
    assert c.ttft_s > continuous(r, 16, 1000, 200).ttft_s  # the other 16 wait in the queue


@pytest.mark.parametrize(
    "args, field", [((0, 100, 10), "concurrency"), ((4, 8000, 500), "input_tokens"), ((4, 0, 10), "input_tokens")]
)
def test_bad_input_names_the_field(args, field):
    with pytest.raises(InputError) as err:
        continuous(R, *args)
    assert err.value.field == field  # the CLI prints the flag (planner/cli/flags.py)
