"""Bounded work: a simulation or a search probe above MAX_SIMULATED_TOKENS is refused before it runs, exit 2 with
one line naming the flag (issue 22 item 8: `simulate --num-requests 1000000 --rate 5` and `--output-tokens 100000`
ran for minutes)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.cli import main
from planner.cli.work_budget import MAX_SIMULATED_TOKENS, check_workload, simulated_tokens
from planner.core.errors import InputError
from planner.traffic.workload import Workload


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["simulate", "--rate", "5", "--num-requests", "1000000"], "--num-requests"),
        (["simulate", "--rate", "5", "--num-requests", "100", "--output-tokens", "1000000"], "--output-tokens"),
        (["simulate", "--rate", "5", "--num-requests", "100", "--output-dist", "fixed:1000000"], "--output-dist"),
        (
            ["simulate", "--rate", "5", "--num-requests", "100000", "--long-prefill-token-threshold", "1"],
            "--long-prefill-token-threshold",
        ),
        (["fleet", "--rate", "5", "--num-requests", "1000000", "--replicas", "2"], "--num-requests"),
        (["capacity", "--target-rate", "1", "--num-requests", "100000", "--output-tokens", "5000"], "--num-requests"),
        (["disagg", "--target-rate", "1", "--num-requests", "100000", "--output-tokens", "5000"], "--num-requests"),
        (["recommend", "--target-rate", "1", "--num-requests", "20000", "--output-tokens", "5000"], "--num-requests"),
    ],
)
def test_too_much_work_is_one_line_naming_the_flag(argv, flag, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"error: {flag}:"), err
    assert f"{MAX_SIMULATED_TOKENS:,}" in err


def _workload(n: int, prompt: int, output: int) -> Workload:
    return Workload(np.arange(n, dtype=float), np.full(n, prompt), np.full(n, output))


def test_the_budget_counts_output_tokens_and_prompt_chunks():
    # 1,000 requests of 1,000 + 200 tokens: 200,000 output tokens; chunked 100 tokens a step, 10 chunks each more
    wl = _workload(1000, 1000, 200)
    assert simulated_tokens(wl.prompt_tokens, wl.output_tokens) == 200_000
    assert simulated_tokens(wl.prompt_tokens, wl.output_tokens, 100) == 200_000 + 10_000
    assert simulated_tokens(np.array([1001]), np.array([1]), 100) == 1 + 11  # a partial chunk is a step


def test_at_the_budget_passes_one_token_more_is_refused():
    n = 10_000  # 5,000 output tokens each
    check_workload(_workload(n, 10, MAX_SIMULATED_TOKENS // n))
    with pytest.raises(InputError) as err:
        check_workload(_workload(n + 1, 10, MAX_SIMULATED_TOKENS // n))
    assert err.value.field == "--num-requests"
