"""`python -m planner memory`: the contract keys, the primer's table, and errors that name the field."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

KEYS = {
    "params",
    "weight_bytes",
    "weight_bytes_per_gpu",
    "kv_bytes_per_token",
    "kv_bytes_per_token_per_gpu",
    "kv_bytes_per_request",
    "textbook_max_requests",
    "kv_pool_bytes_per_gpu",
    "num_gpu_blocks",
    "kv_cache_tokens",
    "max_concurrency",
}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "planner", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def memory_json(*args: str) -> dict:
    out = run("memory", *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_contract_keys_on_defaults():
    data = memory_json()
    assert KEYS <= set(data)
    assert data["params"] == 8_030_261_248
    assert data["kv_cache_tokens"] == data["num_gpu_blocks"] * 16


@pytest.mark.parametrize("gb, weights, fit", [("48", "fp16", 16), ("80", "fp16", 31)])
def test_primer_table_for_llama2_7b(gb, weights, fit):
    # Llama-2-7B has the primer's 7B shape; its 6.74B parameters weigh 13.48 GB in FP16 (the primer rounds to 14).
    data = memory_json(
        "--model", "meta-llama/Llama-2-7b-hf", "--gpu-memory-gb", gb, "--weights", weights, "--context", "4000"
    )
    assert data["kv_bytes_per_token"] == 524_288
    assert data["kv_bytes_per_request"] == 2_097_152_000
    assert data["textbook_max_requests"] == fit


def test_24gb_4bit_fits_nine():
    data = memory_json(
        "--model", "meta-llama/Llama-2-7b-hf", "--gpu-memory-gb", "24", "--weights", "awq-int4", "--context", "4000"
    )
    assert data["textbook_max_requests"] == 9  # 24 GB − ~3.9 GB of 4-bit weights, 2.1 GB per request


def test_config_path_and_tp():
    path = ROOT / "data" / "models" / "meta-llama--Llama-3.1-70B.json"
    data = memory_json("--model", str(path), "--gpu", "a100-80gb", "--tp", "4", "--max-model-len", "8192")
    assert data["weight_bytes_per_gpu"] == pytest.approx(data["weight_bytes"] / 4)
    assert data["kv_bytes_per_token_per_gpu"] == data["kv_bytes_per_token"] / 4


@pytest.mark.parametrize(
    "args, field",
    [
        (["--gpu", "X100"], "--gpu"),
        (["--tp", "3"], "--tp"),
        (["--num-gpus", "3", "--tp", "2"], "--num-gpus"),
        (["--weights", "int3"], "--weights"),
        (["--kv-dtype", "fp4"], "--kv-dtype"),
        (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
        (["--block-size", "0"], "--block-size"),
        (["--model", "nope/none"], "--model"),
        (["--model", "/tmp/does-not-exist.json"], "--model"),
        (["--context", "-5"], "--context"),
        (["--tp", "two"], "--tp"),
    ],
)
def test_bad_input_exits_2_naming_the_field(args, field):
    out = run("memory", *args)
    assert out.returncode == 2
    assert field in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_malformed_config_file_names_the_key(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text(
        json.dumps(
            {
                "hidden_size": 4096,
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "vocab_size": -1,
                "intermediate_size": 11008,
            }
        )
    )
    out = run("memory", "--model", str(bad))
    assert out.returncode == 2 and "vocab_size" in out.stderr


def test_an_oversized_config_reports_its_own_size(tmp_path):
    big = tmp_path / "config.json"
    with big.open("wb") as f:
        f.truncate(10_000_000)  # a sparse 10 MB file
    done = run("memory", "--model", str(big))
    assert done.returncode == 2
    assert "10,000,000 bytes" in done.stderr and "1,000,001" not in done.stderr  # only the cap + 1 is read
