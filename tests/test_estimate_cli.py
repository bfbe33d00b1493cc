"""`python -m planner estimate`: the JSON contract, the text output and the memory-limit error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from planner.cli import main

KEYS = {
    "prefill_s",
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "tokens_per_s_per_user",
    "throughput_tokens_per_s",
    "bound",
    "step_time_breakdown",
}
ARGS = [
    "estimate",
    "--model",
    "meta-llama/Llama-3.1-8B",
    "--gpu",
    "H100-SXM",
    "--batch",
    "32",
    "--input-tokens",
    "2000",
    "--output-tokens",
    "300",
]


def run_json(capsys, argv) -> dict:
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract(capsys):
    out = run_json(capsys, ARGS)
    assert KEYS <= out.keys()
    assert out["bound"] in ("memory", "compute")
    # no queue wait: the prefill and the request's path outside the steps (frontend, prompt dispatch, output lag),
    # as `simulate` charges every request; --offline (the engine's own benchmark) leaves the path out
    assert out["request_path_s"] > 0 and out["offline"] is False
    assert out["ttft_s"] == pytest.approx(out["prefill_s"] + out["request_path_s"])
    assert out["e2e_s"] == pytest.approx(out["ttft_s"] + 299 * out["tpot_s"])
    offline = run_json(capsys, ARGS + ["--offline"])
    assert offline["ttft_s"] == pytest.approx(offline["prefill_s"]) and offline["request_path_s"] == 0
    assert offline["e2e_s"] == pytest.approx(out["e2e_s"] - out["request_path_s"])
    assert out["tokens_per_s_per_user"] == pytest.approx(1 / out["tpot_s"])
    # B × O / (batch prefill + all decode steps)
    assert out["throughput_tokens_per_s"] == pytest.approx(32 * 300 / (out["prefill_s"] + 299 * out["tpot_s"]))
    assert sum(out["step_time_breakdown"].values()) == pytest.approx(out["tpot_s"])


def test_engine_profiles_differ(capsys):
    vllm = run_json(capsys, ARGS + ["--engine", "vllm"])
    trt = run_json(capsys, ARGS + ["--engine", "tensorrt-llm"])
    assert vllm["engine"] == "vllm" and trt["engine"] == "tensorrt-llm"
    assert vllm["tpot_s"] != trt["tpot_s"]


def test_queue_wait_adds_to_ttft(capsys):
    out = run_json(capsys, ARGS + ["--queue-wait-ms", "40"])
    assert out["ttft_s"] == pytest.approx(out["prefill_s"] + out["request_path_s"] + 0.040)


def test_batch_above_memory_limit_names_the_limit(capsys):
    out = run_json(capsys, ARGS)
    limit = out["max_batch"]
    argv = [a if a != "32" else str(limit + 1) for a in ARGS]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--batch" in err and "memory limit" in err and f"at most {limit}" in err


@pytest.mark.parametrize("flag", ["--batch", "--input-tokens", "--output-tokens"])
def test_non_positive_workload_is_refused(capsys, flag):
    argv = list(ARGS)
    argv[argv.index(flag) + 1] = "0"
    assert main(argv) == 2
    assert flag in capsys.readouterr().err


def test_text_output_via_module():
    res = subprocess.run([sys.executable, "-m", "planner", *ARGS], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "TTFT" in res.stdout and "TPOT" in res.stdout and "throughput" in res.stdout


def test_batch_is_capped_at_max_num_seqs_and_says_so(capsys):
    argv = [
        "estimate",
        "--gpu",
        "H100-SXM",
        "--batch",
        "64",
        "--max-num-seqs",
        "16",
        "--input-tokens",
        "500",
        "--output-tokens",
        "100",
    ]
    out = run_json(capsys, argv)
    assert out["batch"] == 16 and out["requested_batch"] == 64 and out["batch_capped_by_max_num_seqs"]
    assert main(argv) == 0
    assert "capped at max_num_seqs=16" in capsys.readouterr().out
    assert run_json(capsys, ARGS)["batch_capped_by_max_num_seqs"] is False  # 32 ≤ the default 256


def test_continuous_mode_reports_the_benchmark_figures(capsys):
    out = run_json(capsys, ARGS + ["--mode", "continuous"])
    assert out["mode"] == "continuous" and out["concurrency"] == 32
    static = run_json(capsys, ARGS)
    # the 32 streams start together, so the first round is all 32 prompts at once; 8,192 tokens a step take 4 of
    # them a step, and the groups that were prefilled together come back together: a staircase of waits, shorter on
    # average than the static batch's one pass over all 32 and longer than one group's step
    one_group = run_json(capsys, [*ARGS[:-6], "--batch", "4", "--input-tokens", "2000", "--output-tokens", "300"])
    assert one_group["ttft_s"] < out["ttft_s"] < static["ttft_s"]
    assert out["client"] == "vllm-bench"
    assert out["tpot_s"] > static["tpot_s"]  # decode steps share the budget with prompt chunks
    assert main(ARGS + ["--mode", "continuous"]) == 0
    assert "continuous batching at concurrency 32" in capsys.readouterr().out


def test_the_answer_names_the_engine_release_its_constants_describe(capsys):
    """`engine_version` (added key): data/engines.yaml's `version`, static and continuous, and in the text."""
    from planner.core.engine import engines

    for engine in ("tensorrt-llm", "sglang"):
        want = engines()[engine].version
        for mode in ("static", "continuous"):
            out = run_json(capsys, ARGS + ["--engine", engine, "--mode", mode, "--batch", "4"])
            assert out["engine_version"] == want and out["engine"] == engine
    assert main(ARGS + ["--engine", "tensorrt-llm"]) == 0
    assert "engine tensorrt-llm 1.0-1.3 (PyTorch backend) (calibrated" in capsys.readouterr().out
