"""`python -m planner simulate`: the JSON contract, exit 2 with one line naming the flag, trace replay."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from planner.cli import main

CONTRACT = {
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "queue_s",
    "throughput_tokens_per_s",
    "completed",
    "rejected",
    "preemptions",
    "prefix_hit_rate",
    "simulated_s",
}
SMALL = ["--num-requests", "200"]


def run(capsys, argv) -> tuple[int, str, str]:
    try:
        code = main(["simulate", *argv])
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(capsys, argv) -> dict:
    code, out, err = run(capsys, [*argv, "--json"])
    assert code == 0, err
    return json.loads(out)


def test_open_loop_json_contract(capsys):
    out = run_json(capsys, ["--rate", "5", *SMALL, "--input-tokens", "800", "--output-tokens", "100"])
    assert CONTRACT <= out.keys()
    for key in ("ttft_s", "tpot_s", "e2e_s", "queue_s"):
        assert set(out[key]) == {"mean", "p50", "p95", "p99"}
        assert 0 <= out[key]["p50"] <= out[key]["p95"] <= out[key]["p99"]
    assert out["completed"] == 200 and out["rejected"] == 0 and out["preemptions"] == 0
    assert out["throughput_tokens_per_s"] > 0 and out["simulated_s"] > 200 / 5 * 0.5
    assert out["model"] == "meta-llama/Llama-3.1-8B" and out["gpu"] == "H100-SXM" and out["seed"] == 0


def test_same_seed_same_result_other_seed_differs(capsys):
    args = ["--rate", "8", *SMALL, "--arrival", "gamma", "--cv", "2"]
    a, b = run_json(capsys, args), run_json(capsys, args)
    c = run_json(capsys, [*args, "--seed", "1"])
    assert a["ttft_s"] == b["ttft_s"] and a["ttft_s"] != c["ttft_s"] and c["seed"] == 1


def test_closed_loop_and_backpressure(capsys):
    closed = run_json(capsys, ["--users", "10", "--think-time", "1", *SMALL, "--output-dist", "uniform:10,50"])
    assert closed["completed"] == 200
    flood = run_json(capsys, ["--rate", "500", *SMALL, "--max-queue", "3", "--input-tokens", "4000"])
    assert flood["rejected"] > 0 and flood["completed"] + flood["rejected"] == 200


def test_trace_replay_with_time_scale_and_prefix_caching(capsys):
    out = run_json(capsys, ["--trace", "azure_code", "--num-requests", "300", "--time-scale", "20"])
    assert out["completed"] + out["rejected"] == 300 and "azure" in out["source"].lower()
    moon = run_json(capsys, ["--trace", "mooncake", "--num-requests", "100", "--prefix-caching"])
    assert moon["prefix_hit_rate"] >= 0 and moon["completed"] + moon["rejected"] == 100


def test_text_output(capsys):
    code, out, _ = run(capsys, ["--rate", "5", *SMALL, "--slo-ttft-ms", "500", "--slo-tpot-ms", "50"])
    assert code == 0
    assert "TTFT" in out and "TPOT" in out and "queue wait" in out and "goodput" in out


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--rate", "-1"], "--rate"),
        (["--rate", "0"], "--rate"),
        (["--rate", "nan"], "--rate"),
        (["--rate", "1", "--users", "3"], "--users"),
        ([], "--rate"),  # no traffic at all: argparse names the required group
        (["--users", "4", "--think-time", "-1"], "--think-time"),  # without it: a benchmark client's streams
        (["--users", "4", "--think-time", "2", "--client", "aiperf"], "--client"),  # a client's streams do not think
        (["--rate", "1", "--input-dist", "zipf:3"], "--input-dist"),
        (["--rate", "1", "--output-dist", "uniform:5"], "--output-dist"),
        (["--rate", "1", "--input-tokens", "0"], "--input-tokens"),
        (["--rate", "1", "--input-tokens", "10", "--input-dist", "fixed:5"], "--input-dist"),
        (["--rate", "1", "--cv", "2"], "--cv"),
        (["--rate", "1", "--arrival", "weibull"], "--arrival"),
        (["--rate", "1", "--num-requests", "0"], "--num-requests"),
        (["--rate", "1", "--max-queue", "-1"], "--max-queue"),
        (["--trace", "no_such_trace"], "--trace"),
        (["--trace", "azure_conv", "--time-scale", "0"], "--time-scale"),
        (["--trace", "azure_conv", "--input-tokens", "5"], "--input-tokens"),
        (["--rate", "1", "--tp", "3"], "--tp"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(capsys, argv, flag):
    code, out, err = run(capsys, argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and flag in err, err


def test_malformed_trace_names_flag_row_and_column(capsys, tmp_path):
    bad = tmp_path / "mine.csv"
    bad.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,10\n1.5,abc,10\n")
    code, _, err = run(capsys, ["--trace", str(bad)])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--trace" in err and "row 3" in err and "prompt_tokens" in err


def test_runs_as_a_module():
    proc = subprocess.run(
        [sys.executable, "-m", "planner", "simulate", "--rate", "2", "--num-requests", "50", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["completed"] == 50
