"""Speculative decoding: the expectation against a seeded Monte Carlo, the primer's example, and the speed-up."""

from __future__ import annotations

import pytest

from planner.core.catalog import get_model
from planner.core.scenario import Scenario, resolve, resolve_draft
from planner.core.specs import Deployment
from planner.latency.perf_model import PerfModel
from planner.techniques import spec_decode as sd


@pytest.mark.parametrize("alpha,k", [(0.5, 1), (0.6, 4), (0.8, 4), (0.9, 7), (0.3, 10)])
def test_expected_tokens_match_a_seeded_monte_carlo_within_one_percent(alpha, k):
    exact = sd.expected_tokens_per_pass(alpha, k)
    simulated = sd.simulate_tokens_per_pass(alpha, k, num_passes=200_000, seed=7)
    assert simulated == pytest.approx(exact, rel=0.01)


def test_expectation_by_hand_and_limits():
    # α = 0.8, k = 4: 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616
    assert sd.expected_tokens_per_pass(0.8, 4) == pytest.approx(3.3616)
    assert sd.expected_tokens_per_pass(0.0, 4) == 1.0  # a wrong first guess still yields the target's token
    assert sd.expected_tokens_per_pass(1.0, 4) == 5.0  # all accepted + the bonus token


def test_primer_example_four_proposed_three_accepted_gives_four_tokens():
    assert sd.tokens_from_pass([True, True, True, False]) == 4
    rows = sd.walkthrough(4, 3)
    assert sum(row["step"].startswith("draft pass") for row in rows) == 4
    assert sum(row["step"] == "target pass" for row in rows) == 1
    assert "3 accepted + 1 from the target = 4 tokens" in rows[-1]["what"]
    assert sd.tokens_from_pass([False, True, True, True]) == 1
    assert sd.tokens_from_pass([True] * 4) == 5


@pytest.fixture(scope="module")
def seventy_b():
    r = resolve(Scenario(model="meta-llama/Llama-3.1-70B", deployment=Deployment(tensor_parallel_size=4, num_gpus=4)))
    d = resolve_draft(r, get_model("meta-llama/Llama-3.1-8B"))
    return r, d, PerfModel(r), PerfModel(d)


def test_speedup_fades_with_batch(seventy_b):
    _, _, target, draft = seventy_b
    t = sd.timing(target, draft, alpha=0.8, k=4, batches=[1, 8, 64, 512, 2048], context_tokens=1024)
    assert t.speedup[0] > 1.5  # small batch: spare compute, the extra tokens are nearly free
    assert all(a >= b for a, b in zip(t.speedup, t.speedup[1:]))
    assert t.speedup[-1] < 1.0  # large batch: verifying k + 1 tokens costs more than it returns


def test_speedup_equation(seventy_b):
    _, _, target, draft = seventy_b
    t = sd.timing(target, draft, 0.7, 3, [4], 2000)
    by_hand = sd.expected_tokens_per_pass(0.7, 3) * t.target_step_s[0] / (3 * t.draft_step_s[0] + t.verify_step_s[0])
    assert t.speedup[0] == pytest.approx(by_hand)
    assert t.verify_step_s[0] >= t.target_step_s[0]  # verifying k + 1 tokens costs at least one decode step


def test_best_k_is_the_argmax_and_grows_with_alpha(seventy_b):
    _, _, target, draft = seventy_b
    k_low, rows = sd.best_k(target, draft, 0.5, 1, 1024)
    assert k_low == max(rows, key=lambda row: row.speedup).k
    k_high, _ = sd.best_k(target, draft, 0.95, 1, 1024)
    assert k_high > k_low


def test_draft_takes_memory(seventy_b):
    r, d, _, _ = seventy_b
    mem = sd.draft_memory(r, d, 2300)
    assert mem.draft_weight_bytes_per_gpu == pytest.approx(16.06e9 / 4, rel=0.01)
    assert mem.kv_pool_tokens_with < mem.kv_pool_tokens_without
    assert mem.max_requests_with < mem.max_requests_without


def test_draft_presets_are_smaller_same_vocabulary_first():
    target = get_model("meta-llama/Llama-3.1-70B")
    options = sd.draft_candidates(target)
    # smallest same-vocabulary preset first: Llama-3.2-1B (128,256 tokens, like Llama-3.1), then Llama-3.1-8B
    assert options[:2] == ["unsloth/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.1-8B"]
    assert sd.default_draft(target) == options[0]
    assert sd.default_draft(get_model("meta-llama/Llama-3.1-8B")) == "unsloth/Llama-3.2-1B-Instruct"
    assert "meta-llama/Llama-3.1-405B" not in options
