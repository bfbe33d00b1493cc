"""`python -m planner report` and `python -m planner walkthrough` from the command line."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

from conftest import ROOT
from planner.cli import main
from planner.report import report_rows, to_csv
from planner.core.scenario import Scenario
from planner.core.specs import Deployment


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
    assert out.startswith("# Sizing report") and "| name | value | unit | note |" in out


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
    code, out, _ = run(capsys, "walkthrough", "six-requests", "--set", "output_tokens=4,4,4", "--set", "slots=3",
                       "--json")
    steps = {s["number"]: s for s in json.loads(out)["steps"]}
    assert steps["2"]["value"] == steps["3"]["value"] == 4  # equal lengths: static and continuous tie
    code, _, err = run(capsys, "walkthrough", "kv-cache", "--set", "layers=2")
    assert code == 2 and "--set layers" in err
    code, _, err = run(capsys, "walkthrough", "kv-cache", "--set", "num_kv_heads=5")
    assert code == 2 and "num_kv_heads" in err


def test_walkthrough_as_a_process():
    out = subprocess.run([sys.executable, "-m", "planner", "walkthrough", "six-requests"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert "61.5%" in out and "88.9%" in out and "1.83 steps" in out
