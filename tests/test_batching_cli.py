"""`python -m planner batching`: the JSON contract on the primer's six requests, text output, bad CSVs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from planner.cli import main
from tests.conftest import ROOT

SIX = "name,arrival,output_tokens\nA,0,2\nB,0,8\nC,0,4\nD,0,3\nE,0,5\nF,0,2\n"
CONTRACT = {"avg_wait", "avg_latency", "p50_latency", "p95_latency", "p99_latency", "end_step", "gpu_busy"}


@pytest.fixture
def six_csv(tmp_path):
    path = tmp_path / "six.csv"
    path.write_text(SIX)
    return path


def run_json(capsys, *argv):
    assert main(["batching", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract_six_requests(capsys, six_csv):
    out = run_json(capsys, "--requests", str(six_csv), "--slots", "3", "--max-wait", "0")
    assert set(out) == {"static", "continuous"}
    static, cont = out["static"], out["continuous"]
    assert CONTRACT <= set(static) and CONTRACT <= set(cont)
    # static: batches end at 8 and 13; waits 0,0,0,8,8,8 -> 4.0; busy 24 / (3 × 13)
    assert (static["end_step"], static["avg_wait"], static["avg_latency"]) == (13, 4.0, 10.5)
    assert static["gpu_busy"] == pytest.approx(24 / 39)
    assert (static["p50_latency"], static["p95_latency"], static["p99_latency"]) == (10.5, 13.0, 13.0)
    # continuous: waits 0,0,0,2,4,5 -> 11/6; latencies 2,8,4,5,9,7; busy 24 / (3 × 9)
    assert cont["end_step"] == 9
    assert cont["avg_wait"] == pytest.approx(11 / 6)
    assert cont["avg_latency"] == pytest.approx(35 / 6)
    assert cont["gpu_busy"] == pytest.approx(24 / 27)
    # linear percentiles of 2,4,5,7,8,9: p50 = 6, p95 = 8 + 0.75, p99 = 8 + 0.95
    assert (cont["p50_latency"], cont["p95_latency"], cont["p99_latency"]) == pytest.approx((6.0, 8.75, 8.95))


def test_max_wait_changes_static_only(capsys, tmp_path):
    path = tmp_path / "late.csv"
    path.write_text("name,arrival,output_tokens,prompt_tokens\nA,0,2,10\nB,1,4,20\nC,4,1,30\n")
    out = run_json(capsys, "--requests", str(path), "--slots", "2", "--max-wait", "3")
    # static: A+B fire at 1 (full), held to 5; C waits for its window to 7, done 8
    assert out["static"]["end_step"] == 8
    assert out["continuous"]["end_step"] == 5  # A 0-2, B 1-5, C 4-5


def test_text_output(capsys, six_csv):
    assert main(["batching", "--requests", str(six_csv), "--slots", "3", "--max-wait", "0"]) == 0
    text = capsys.readouterr().out
    assert "static" in text and "61.5%" in text and "88.9%" in text


@pytest.mark.parametrize(
    "body,needle",
    [
        ("name,arrival,output_tokens\nA,0,2\nB,0,lots\n", "row 2, column output_tokens"),
        ("name,arrival,output_tokens\nA,-3,2\n", "row 1, column arrival"),
        ("name,output_tokens\nA,2\n", "column arrival"),
    ],
)
def test_malformed_csv_exits_2_naming_row_and_column(capsys, tmp_path, body, needle):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    assert main(["batching", "--requests", str(path), "--slots", "3", "--max-wait", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and needle in err and len(err.splitlines()) == 1


def test_bad_arguments_exit_2(capsys, six_csv, tmp_path):
    assert main(["batching", "--requests", str(six_csv), "--slots", "0", "--max-wait", "0"]) == 2
    assert "--slots" in capsys.readouterr().err
    assert main(["batching", "--requests", str(tmp_path / "none.csv"), "--slots", "3", "--max-wait", "0"]) == 2
    assert "--requests" in capsys.readouterr().err


def test_module_entry_point(six_csv, tmp_path):
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner",
            "batching",
            "--requests",
            str(six_csv),
            "--slots",
            "3",
            "--max-wait",
            "0",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["continuous"]["end_step"] == 9
    bad = tmp_path / "bad.csv"
    bad.write_text("name,arrival,output_tokens\nA,0,x\n")
    fail = subprocess.run(
        [sys.executable, "-m", "planner", "batching", "--requests", str(bad), "--slots", "3", "--max-wait", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert fail.returncode == 2 and "row 1, column output_tokens" in fail.stderr
