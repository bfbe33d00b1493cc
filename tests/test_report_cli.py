"""`python -m planner report` and `python -m planner walkthrough` from the command line."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys

from conftest import ROOT

from planner.cli import main
from planner.core.scenario import Scenario
from planner.core.specs import Deployment
from planner.report import report_rows, to_csv


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_report_csv_equals_the_library(capsys):
    code, out, _ = run(capsys, "report", "--gpu", "A100-80GB", "--context", "4096", "--max-model-len", "8192")
    assert code == 0
    expected = report_rows(Scenario(gpu="A100-80GB", context_tokens=4096, deployment=Deployment(max_model_len=8192)))
    assert out == to_csv(expected)
    assert next(csv.reader(io.StringIO(out))) == ["section", "name", "value", "unit", "note"]


def test_report_json_and_markdown(capsys):
    code, out, _ = run(capsys, "report", "--format", "json", "--context", "2048", "--max-model-len", "4096")
    rows = json.loads(out)
    assert code == 0 and {"section", "name", "value", "unit", "note"} == set(rows[0])
    assert any(r["name"] == "kv_cache_tokens" for r in rows)
    code, out, _ = run(capsys, "report", "--json", "--context", "2048", "--max-model-len", "4096")
    assert json.loads(out) == rows
    code, out, _ = run(capsys, "report", "--format", "md", "--context", "2048", "--max-model-len", "4096")
    assert out.startswith("# Sizing report") and "| name | value | note |" in out


def test_report_bad_flag_names_it(capsys):
    code, _, err = run(capsys, "report", "--tp", "3")
    assert code == 2 and "--tp" in err


def test_walkthrough_text_and_json(capsys):
    code, out, _ = run(capsys, "walkthrough", "kv-cache")
    assert code == 0 and "524,288 B" in out and "2.10 GB" in out and "33.6 GB" in out
    code, out, _ = run(capsys, "walkthrough", "latency", "--json")
    data = json.loads(out)
    assert [s["result"] for s in data["steps"]][:5] == ["200 ms", "240 ms", "40 tokens/s", "7.715 s", "97%"]


def test_walkthrough_set_changes_an_input(capsys):
    code, out, _ = run(
        capsys, "walkthrough", "six-requests", "--set", "output_tokens=4,4,4", "--set", "slots=3", "--json"
    )
    steps = {s["number"]: s for s in json.loads(out)["steps"]}
    assert steps["2"]["value"] == steps["3"]["value"] == 4  # equal lengths: static and continuous tie
    code, _, err = run(capsys, "walkthrough", "kv-cache", "--set", "layers=2")
    assert code == 2 and "--set layers" in err
    code, _, err = run(capsys, "walkthrough", "kv-cache", "--set", "num_kv_heads=5")
    assert code == 2 and "num_kv_heads" in err


def test_walkthrough_as_a_process():
    out = subprocess.run(
        [sys.executable, "-m", "planner", "walkthrough", "six-requests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "61.5%" in out and "88.9%" in out and "1.83 steps" in out


def test_report_takes_the_capacity_traffic_and_slo_flags(capsys):
    code, out, _ = run(
        capsys,
        "report",
        "--json",
        "--gpu",
        "A100-80GB",
        "--max-model-len",
        "8192",
        "--profile",
        "custom",
        "--input-tokens",
        "1000",
        "--output-tokens",
        "200",
        "--num-requests",
        "300",
        "--target-rate",
        "12",
        "--slo-ttft-p95",
        "1.5",
        "--slo-tpot-p95",
        "0.05",
        "--headroom",
        "1.5",
    )
    assert code == 0
    t = {(r["section"], r["name"]): r for r in json.loads(out)}
    assert t[("plan", "target_rate")]["value"] == 12 and t[("plan", "headroom")]["value"] == 1.5
    assert t[("plan", "slo_ttft_p95_s")]["value"] == 1.5 and t[("plan", "slo_tpot_p95_s")]["value"] == 0.05
    assert t[("plan", "mean_prompt_tokens")]["value"] == 1000 and t[("plan", "mean_output_tokens")]["value"] == 200
    rate = t[("plan", "max_rate_per_replica")]["value"]
    assert t[("plan", "replicas")]["value"] == math.ceil(12 * 1.5 / rate)
    assert t[("plan", "usd_per_hour")]["unit"] == "USD/h" and t[("plan", "slo_holds")]["value"] in (True, False)


def test_report_bad_slo_names_the_flag(capsys):
    code, _, err = run(capsys, "report", "--slo-ttft-p95", "0")
    assert code == 2 and "--slo-ttft-p95" in err
    code, _, err = run(capsys, "report", "--target-rate", "-1")
    assert code == 2 and "--target-rate" in err
