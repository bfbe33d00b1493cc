"""`python -m planner capacity` and `recommend`: the JSON contract keys and the exit-2 cases."""

from __future__ import annotations

import json

import pytest

from planner.cli import main

FAST = ["--profile", "custom", "--input-tokens", "500", "--output-tokens", "100", "--num-requests", "200"]


def run_json(capsys, argv: list[str]) -> dict:
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_capacity_contract(capsys):
    out = run_json(
        capsys,
        [
            "capacity",
            "--target-rate",
            "30",
            "--slo-ttft-p95",
            "1.5",
            "--slo-tpot-p95",
            "0.05",
            "--price",
            "H100-SXM=2.0",
        ]
        + FAST,
    )
    for key in ("max_rate_per_replica", "replicas", "usd_per_hour", "usd_per_million_output_tokens"):
        assert out[key] is not None, key
    assert out["usd_per_hour"] == pytest.approx(out["replicas"] * 2.0)
    assert out["slo"] == {"ttft_p95_s": 1.5, "tpot_p95_s": 0.05, "e2e_p99_s": None}


def test_capacity_text(capsys):
    assert main(["capacity", "--target-rate", "10"] + FAST) == 0
    assert "replicas" in capsys.readouterr().out


def test_recommend_contract(capsys):
    out = run_json(
        capsys, ["recommend", "--target-rate", "20", "--gpus", "H100-SXM,l40s", "--tps", "1,2", "--workers", "1"] + FAST
    )
    opts = out["options"]
    assert out["num_options"] == len(opts) >= 4
    for key in (
        "gpu",
        "num_gpus",
        "tp",
        "weights",
        "max_rate_per_replica",
        "replicas",
        "usd_per_hour",
        "usd_per_million_output_tokens",
        "ttft_p95_s",
        "tpot_p95_s",
    ):
        assert key in opts[0], key
    costs = [o["usd_per_hour"] for o in opts if o["feasible"]]
    assert costs == sorted(costs) and [o["rank"] for o in opts] == list(range(1, len(opts) + 1))


@pytest.mark.parametrize(
    "argv",
    [
        ["capacity", "--target-rate", "0"],
        ["capacity", "--target-rate", "-3"],
        ["capacity", "--target-rate", "10", "--slo-ttft-p95", "0"],
        ["capacity", "--target-rate", "10", "--slo-tpot-p95", "-1"],
        ["capacity", "--target-rate", "10", "--price", "H100-SXM"],
        ["capacity", "--target-rate", "10", "--price", "NOPE=1"],
        ["capacity", "--target-rate", "10", "--price", "H100-SXM=abc"],
        ["capacity", "--target-rate", "10", "--headroom", "0.5"],
        ["capacity", "--target-rate", "10", "--profile", "chat", "--input-tokens", "100"],  # trace lengths
        ["capacity", "--target-rate", "10", "--num-requests", "10"],
        ["capacity", "--target-rate", "10", "--gpu", "NOPE"],
        ["capacity"],  # --target-rate is required
        ["recommend", "--target-rate", "10", "--gpus", "NOPE"],
        ["recommend", "--target-rate", "10", "--tps", "a,b"],
        ["recommend", "--target-rate", "10", "--workers", "0"],
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(argv))
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and "Traceback" not in err


def test_explicit_lengths_imply_the_custom_profile(capsys):
    # issue 14: `capacity --input-tokens 1000 --output-tokens 200` used to fail with "applies only to --profile custom"
    out = run_json(
        capsys,
        [
            "capacity",
            "--target-rate",
            "10",
            "--input-tokens",
            "1000",
            "--output-tokens",
            "200",
            "--num-requests",
            "200",
        ],
    )
    assert out["mean_prompt_tokens"] == 1000 and out["mean_output_tokens"] == 200
    assert out["max_rate_per_replica"] > 0
    # 200 such requests all fit in one batch, so the probes run more (issue 56): six running batches, and the
    # saturation run now has a queue to measure
    assert out["num_requests"] > 200 and "not the 200 asked for" in out["probe_sizing"]
    assert out["saturated_rps"] is not None and out["max_rate_per_replica"] <= out["saturated_rps"]
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(["capacity", "--target-rate", "10", "--profile", "chat", "--input-tokens", "1000"]))
    assert exc.value.code == 2 and "--input-tokens" in capsys.readouterr().err


def test_recommend_text_says_which_rows_were_not_searched(capsys):
    argv = ["recommend", "--target-rate", "20", "--gpus", "H100-SXM,l40s,a10g", "--tps", "1,2", "--workers", "1"]
    assert main(argv + FAST) == 0
    text = capsys.readouterr().out
    assert "not searched: provably dearer than the runner-up" in text
    skipped = [ln for ln in text.splitlines() if "not searched: ≥ $" in ln]
    assert skipped and not [ln for ln in skipped if "cannot meet the SLO" in ln]  # they were called infeasible


def test_a_deployment_that_does_not_fit_is_not_priced(capsys):
    # issue 56 #2: Qwen3.5-35B-A3B BF16 on one H100 at its 262,144-token window: vLLM's pool holds 195,312 tokens,
    # fewer than one max_model_len request, so vLLM refuses to start; capacity planned 2 replicas at $5.38/h
    from planner.cli import main

    code = main(
        "capacity --model Qwen/Qwen3.5-35B-A3B --gpu H100-SXM --target-rate 20 "
        "--slo-ttft-p95 2 --slo-tpot-p95 0.1".split()
    )
    err = capsys.readouterr().err
    assert code != 0 and "--max-model-len" in err and "vLLM refuses to start" in err and "No capacity or cost" in err
