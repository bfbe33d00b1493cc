"""`python -m planner validate`: the JSON contract, unpredictable rows, and exit 2 on a malformed CSV."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

from planner.cli import main
from planner.core.paths import published_points_csv

FIXTURES = ROOT / "tests" / "fixtures"
POINT_KEYS = {"id", "metric", "measured", "predicted", "error_pct", "reason", "status", "group", "note"}
ROW_KEYS = {"format", "rows", "rows_predicted", "rows_skipped", "skip_reasons"}  # keys added later (never renamed)
SUMMARY_KEYS = {"n", "median_abs_error_pct", "p90_abs_error_pct"}


def run_json(capsys, *args) -> dict:
    assert main(["validate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_contract_keys_on_the_published_points(capsys):
    out = run_json(capsys, "--points", str(published_points_csv()))
    assert set(out) == {"points", "summary"} | ROW_KEYS
    assert out["format"] == "published_points" and out["rows"] == 101
    assert out["rows_predicted"] + out["rows_skipped"] == 101 == sum(out["skip_reasons"].values()) + 85
    assert len(out["points"]) == 101 and all(set(p) == POINT_KEYS for p in out["points"])
    assert all(set(v) == SUMMARY_KEYS for v in out["summary"].values())
    assert sum(v["n"] for v in out["summary"].values()) == 85
    assert "token_time (TBT/TPOT)" in out["summary"]


def test_a_row_it_cannot_predict_gets_null_and_a_reason(capsys):
    points = {p["id"]: p for p in run_json(capsys, "--points", str(FIXTURES / "points_mixed.csv"))["points"]}
    assert points["X02"]["predicted"] is None and points["X02"]["error_pct"] is None
    assert "unknown model" in points["X02"]["reason"]
    assert points["X03"]["predicted"] is None and "request rate" in points["X03"]["reason"]
    ok = points["X01"]
    assert ok["reason"] == "" and ok["measured"] == 16.2
    assert abs(ok["error_pct"] - 100 * (ok["predicted"] - 16.2) / 16.2) < 1e-9


def test_malformed_csv_exits_2_naming_row_and_column(capsys):
    assert main(["validate", "--points", str(FIXTURES / "bad_points.csv"), "--json"]) == 2
    err = capsys.readouterr().err
    assert "row 3" in err and "column value" in err and "Traceback" not in err


def test_missing_file_exits_2(capsys):
    assert main(["validate", "--points", str(FIXTURES / "no_such.csv")]) == 2
    assert "--points" in capsys.readouterr().err


def test_human_text_and_module_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "planner", "validate", "--points", str(FIXTURES / "points_mixed.csv")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "3 of 5 points predicted" in proc.stdout and "not predicted: unknown model" in proc.stdout
