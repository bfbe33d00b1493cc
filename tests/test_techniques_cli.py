"""`python -m planner spec-decode | prefix-cache | paged | flash-attn | quant | tp | lora`: keys and exit codes.

Most cases call planner.cli.main in-process (fast); one runs the real module to check the entry point."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from planner.cli import main


def run_json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_spec_decode_json_contract_through_the_module():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner",
            "spec-decode",
            "--model",
            "meta-llama/Llama-3.1-70B",
            "--tp",
            "4",
            "--alpha",
            "0.8",
            "--k",
            "4",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["expected_tokens_per_pass"] == pytest.approx(3.3616)
    assert data["speedup"] > 1
    assert data["draft_model"] == "unsloth/Llama-3.2-1B-Instruct"  # the smallest same-vocabulary preset


def test_spec_decode_draft_and_batch(capsys):
    data = run_json(
        capsys,
        "spec-decode",
        "--alpha",
        "0.6",
        "--k",
        "3",
        "--draft-model",
        "meta-llama/Llama-2-7b-hf",
        "--model",
        "meta-llama/Llama-2-70b-hf",
        "--gpu",
        "A100-80GB",
        "--tp",
        "4",
        "--batch",
        "16",
    )
    assert data["batch"] == 16 and data["k"] == 3
    assert data["expected_tokens_per_pass"] == pytest.approx(1 + 0.6 + 0.36 + 0.216)
    assert {"speedup", "best_k", "speedup_by_k", "memory", "pass_s"} <= set(data)


def test_spec_decode_text(capsys):
    assert main(["spec-decode", "--alpha", "0.8", "--k", "4"]) == 0
    assert "expected tokens per target pass" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args,flag",
    [
        (["spec-decode", "--alpha", "1.5", "--k", "4"], "--alpha"),
        (["spec-decode", "--alpha", "0.5", "--k", "0"], "--k"),
        (["spec-decode", "--alpha", "0.5", "--k", "4", "--batch", "0"], "--batch"),
        (["spec-decode", "--alpha", "0.5", "--k", "4", "--draft-model", "no/such-model"], "--draft-model"),
        (["prefix-cache", "--prefix-tokens", "5000"], "--prefix-tokens"),
        (["prefix-cache", "--hit-rate", "2"], "--hit-rate"),
        (["prefix-cache", "--trace", "azure_conv"], "--trace"),
        (["paged", "--prompt-dist", "bogus:1"], "prompt"),
        (["paged", "--reserve-tokens", "0"], "--reserve-tokens"),
        (["flash-attn", "--seq-len", "0"], "--seq-len"),
        (["quant", "--formats", "int3"], "--formats"),
        (["tp", "--batch", "0"], "--batch"),
        (["lora", "--modules", "q,zz"], "--modules"),
        (["lora", "--rank", "0"], "--rank"),
    ],
)
def test_bad_input_names_the_flag_and_exits_2(capsys, args, flag):
    assert main(args) == 2
    assert flag in capsys.readouterr().err


def test_missing_required_flag_exits_2():
    with pytest.raises(SystemExit) as exc:
        main(["spec-decode", "--k", "4"])
    assert exc.value.code == 2


def test_prefix_cache_reproduces_the_primer(capsys):
    data = run_json(capsys, "prefix-cache", "--input-tokens", "2000", "--prefix-tokens", "1500")
    assert data["ttft_given_rates_ms"]["before"] == pytest.approx(240)
    assert data["ttft_given_rates_ms"]["after"] == pytest.approx(90)
    assert data["kv_blocks_saved"] == 15 * 93
    assert data["prefill_flops_saved_on_hit"] > 0
    assert data["max_requests_with_sharing"] > data["max_requests_without_sharing"]


def test_prefix_cache_mooncake_hit_rate(capsys):
    data = run_json(capsys, "prefix-cache", "--trace", "mooncake")
    t = data["trace"]
    assert 0 < t["hit_rate_infinite_cache"] < 1 and 0 < t["hit_rate_lru"] <= t["hit_rate_infinite_cache"]


def test_paged_flash_quant_tp_lora(capsys):
    paged = run_json(capsys, "paged", "--reserve-tokens", "8192")
    assert paged["paged_max_requests"] >= paged["contiguous_max_requests"]
    flash = run_json(capsys, "flash-attn", "--batch", "1", "--seq-len", "4096")
    assert flash["standard_bytes"] == 1 * 32 * 4096 * 4096 * 2
    quant = run_json(capsys, "quant", "--formats", "bf16,awq-int4,q4_k_m")
    assert [f["id"] for f in quant["formats"]] == ["bf16", "awq-int4", "q4_k_m"]
    assert len({f["kv_bytes_per_token"] for f in quant["formats"]}) == 1
    tp = run_json(capsys, "tp", "--model", "meta-llama/Llama-2-70b-hf", "--weights", "fp16", "--gpu", "A100-80GB")
    assert tp["min_tp"] == 2
    lo = run_json(capsys, "lora", "--model", "meta-llama/Llama-2-7b-hf", "--rank", "16", "--modules", "q,k,v,o")
    assert lo["adapter_bytes"] == 33_554_432
