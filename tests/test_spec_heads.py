"""Speculative decoding as deployed: EAGLE-3 heads and MTP modules priced as a share of the target's layers, with
published acceptance lengths (data/spec_methods.yaml) or the user's own."""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.sim.spec_heads import (
    DraftHeadCost,
    get_method,
    head_fraction,
    memory_bound_speedup,
    published_acceptance,
)


def test_deepseek_v3_mtp_speedup_by_hand():
    # DeepSeek-V3 (arXiv:2412.19437): one MTP module (k = 1), one Transformer block against the target's 61 layers;
    # second token accepted 85-90% -> 1.85 to 1.90 tokens per pass. At a memory-bound batch the verify step over
    # 2 tokens costs a decode step, the head pass 1/61 of one: 1.85 / (1 + 1/61) = 1.85 x 61 / 62 = 1.8202,
    # 1.90 x 61 / 62 = 1.8694; the report measured 1.8x tokens per second.
    assert head_fraction("mtp", 61) == pytest.approx(1 / 61)
    assert memory_bound_speedup(1.85, 1, 1 / 61) == pytest.approx(1.8202, abs=1e-4)
    assert memory_bound_speedup(1.90, 1, 1 / 61) == pytest.approx(1.8694, abs=1e-4)
    row = published_acceptance("mtp")[0]
    assert (row.model, row.k, row.acceptance_length, row.reported_speedup) == ("deepseek-ai/DeepSeek-V3", 1, 1.85, 1.8)
    assert memory_bound_speedup(row.acceptance_length, row.k, 1 / 61) == pytest.approx(row.reported_speedup, rel=0.02)


def test_every_published_row_names_its_source_and_a_known_method():
    rows = published_acceptance()
    assert len(rows) >= 5
    for row in rows:
        assert get_method(row.method).draft_layers == 1
        assert row.source and 1.0 <= row.acceptance_length <= (row.k or 32) + 1


class _Target:
    """A target step of 10 ms, 2 ms of it the engine's per-step overhead."""

    overhead_s = 0.002

    def step_time_s(self, new_tokens, num_seqs, kv_read_tokens, attn_pairs):
        return 0.010


def test_a_head_pass_is_its_share_of_the_target_step_without_the_overhead():
    # 1 layer of 32: (10 - 2) ms / 32 = 0.25 ms per draft pass
    assert DraftHeadCost(_Target(), 1 / 32).step_time_s(8, 8, 4000, 4000) == pytest.approx(0.25e-3)


def test_simulate_with_an_eagle3_head_names_the_method_and_asks_for_the_acceptance(capsys):
    base = "simulate --rate 1 --num-requests 40 --input-tokens 200 --output-tokens 200 --json"
    assert main(f"{base} --spec-method eagle3".split()) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --spec-alpha") and "Qwen/Qwen3-8B MT-bench: 1.97" in err
    assert main(f"{base} --spec-method mtp --spec-model unsloth/Llama-3.2-1B-Instruct --spec-alpha 0.5".split()) == 2
    assert capsys.readouterr().err.startswith("error: --spec-method")
    assert main(base.split()) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(f"{base} --spec-method eagle3 --spec-k 3 --acceptance-length 2.5".split()) == 0
    head = json.loads(capsys.readouterr().out)
    assert (head["spec_method"], head["spec_k"], plain["spec_method"]) == ("eagle3", 3, None)
    # one request at a time (memory-bound): 2.5 tokens per pass for 3 head passes of 1/32 of a step each
    assert head["tpot_s"]["mean"] < plain["tpot_s"]["mean"] / 1.8
