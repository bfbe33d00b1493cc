"""Speculative decoding as deployed in `estimate` and `capacity` (planner/techniques/spec_methods.py): the MTP hand
case of the DeepSeek-V3 report through the CLI, the user's own acceptance length, and no acceptance assumed."""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.techniques.spec_decode import alpha_from_acceptance_length
from planner.techniques.spec_methods import USER_SOURCE

V3 = "estimate --model deepseek-ai/DeepSeek-V3 --gpu H200 --tp 8 --input-tokens 1000 --output-tokens 200 --json"
LLAMA = "estimate --input-tokens 1000 --output-tokens 200 --json"


def _json(command: str, capsys) -> dict:
    assert main(command.split()) == 0
    return json.loads(capsys.readouterr().out)


def test_mtp_hand_case_through_estimate(capsys):
    # DeepSeek-V3 report (arXiv:2412.19437 §5.4.3): one MTP module (k = 1), second token accepted 85-90% ->
    # 1.85 tokens per pass at the low end; one module = 1 of the 61 layers: 1.85 / (1 + 1/61) = 1.85 × 61/62 = 1.820
    out = _json(V3 + " --batch 1 --spec-method mtp", capsys)
    spec = out["spec"]
    assert spec["k"] == 1 and spec["acceptance_length"] == 1.85
    assert spec["head_fraction"] == pytest.approx(1 / 61)
    assert spec["speedup_memory_bound"] == pytest.approx(1.85 * 61 / 62) == pytest.approx(1.820, abs=5e-4)
    assert "2412.19437" in spec["acceptance_source"]
    # priced: never more than the tokens per pass, and TPOT divided by it
    assert 1 < spec["speedup"] <= 1.85
    assert spec["tpot_s"] == pytest.approx(out["tpot_s"] / spec["speedup"])
    assert spec["e2e_s"] == pytest.approx(out["ttft_s"] + 199 * spec["tpot_s"])


def test_the_users_measured_acceptance_length_is_named_and_priced(capsys):
    # Llama-3.1-8B has 32 layers; an EAGLE-3 head at k = 3 with a measured 2.5 tokens per pass:
    # hand formula 2.5 / (1 + 3/32) = 2.2857
    spec = _json(LLAMA + " --batch 1 --spec-method eagle3 --spec-k 3 --acceptance-length 2.5", capsys)["spec"]
    assert spec["acceptance_source"] == USER_SOURCE
    assert spec["speedup_memory_bound"] == pytest.approx(2.5 / (1 + 3 / 32))
    assert spec["speedup"] == pytest.approx(
        spec["decode_step_s"] * 2.5 / (spec["verify_step_s"] + 3 * spec["head_pass_s"])
    )


def test_the_speed_up_fades_as_decode_turns_compute_bound(capsys):
    args = " --spec-method eagle3 --spec-k 3 --acceptance-length 2.5"
    small = _json(LLAMA + " --batch 1" + args, capsys)["spec"]["speedup"]
    large = _json(LLAMA + " --batch 256 --max-num-seqs 256" + args, capsys)["spec"]["speedup"]
    assert large < small


@pytest.mark.parametrize(
    "extra, flag",
    [
        (" --spec-method eagle3", "--acceptance-length"),  # no published row for Llama-3.1-8B: nothing assumed
        (" --acceptance-length 2", "--acceptance-length"),  # without a method
        (" --spec-method eagle3 --spec-k 2 --acceptance-length 3.5", "--acceptance-length"),  # above k + 1
    ],
)
def test_no_acceptance_source_is_an_error_not_a_guess(extra, flag, capsys):
    assert main((LLAMA + " --batch 1" + extra).split()) == 2
    assert capsys.readouterr().err.startswith(f"error: {flag}")


def test_estimate_without_spec_adds_a_null_key(capsys):
    assert _json(LLAMA + " --batch 4", capsys)["spec"] is None


CAPACITY = "capacity --target-rate 5 --input-tokens 500 --output-tokens 200 --num-requests 200 --json"


def test_capacity_with_an_eagle3_head_at_a_measured_acceptance(capsys):
    plain = _json(CAPACITY, capsys)
    spec = _json(CAPACITY + " --spec-method eagle3 --spec-k 2 --acceptance-length 2.0", capsys)
    assert spec["spec_method"] == "eagle3" and spec["spec_k"] == 2
    assert spec["spec_alpha"] == pytest.approx(alpha_from_acceptance_length(2.0, 2))
    assert spec["max_rate_per_replica"] != plain["max_rate_per_replica"]
    assert main((CAPACITY + " --spec-method mtp").split()) == 2  # no acceptance given: nothing assumed
    assert "no default is assumed" in capsys.readouterr().err
