"""Speculative decoding priced from a named acceptance: the per-token rate from a published acceptance length,
and no silent default in `simulate`."""

from __future__ import annotations

import pytest

from planner.cli import main
from planner.core.errors import InputError
from planner.techniques.spec_decode import alpha_from_acceptance_length, expected_tokens_per_pass


def test_deepseek_v3_mtp_acceptance_by_hand():
    # DeepSeek-V3 technical report (arXiv 2412.19437, §5.4.3): one MTP module (k = 1) whose second token is
    # accepted 85-90% of the time, 1.8x the tokens per second. Tokens per pass = 1 + α: 1.85 to 1.90.
    assert expected_tokens_per_pass(0.85, 1) == pytest.approx(1.85)
    assert expected_tokens_per_pass(0.90, 1) == pytest.approx(1.90)
    assert alpha_from_acceptance_length(1.875, 1) == pytest.approx(0.875)


def test_acceptance_length_inverts_the_expectation():
    # k = 4, α = 0.8: (1 − 0.8^5) / (1 − 0.8) = (1 − 0.32768) / 0.2 = 3.3616 tokens per pass
    assert expected_tokens_per_pass(0.8, 4) == pytest.approx(3.3616)
    assert alpha_from_acceptance_length(3.3616, 4) == pytest.approx(0.8, abs=1e-9)
    assert alpha_from_acceptance_length(1.0, 4) == pytest.approx(0.0, abs=1e-9)
    assert alpha_from_acceptance_length(5.0, 4) == pytest.approx(1.0, abs=1e-6)  # (1 − α^5)/(1 − α) cancels near 1
    with pytest.raises(InputError) as err:
        alpha_from_acceptance_length(6.0, 4)  # more than k + 1 tokens per pass cannot be
    assert err.value.field == "acceptance_length"


@pytest.mark.parametrize(
    "flags, flag",
    [
        ("--spec-model unsloth/Llama-3.2-1B-Instruct", "--spec-alpha"),  # no acceptance given: no default
        ("--spec-model unsloth/Llama-3.2-1B-Instruct --acceptance-length 6", "--acceptance-length"),
        ("--spec-alpha 0.7", "--spec-alpha"),  # an acceptance without a draft
    ],
)
def test_simulate_asks_for_the_acceptance(flags, flag, capsys):
    assert main(f"simulate --rate 2 --num-requests 100 {flags}".split()) == 2
    assert capsys.readouterr().err.startswith(f"error: {flag}")
