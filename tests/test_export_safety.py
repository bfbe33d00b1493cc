"""Exports neutralised: a model named like a spreadsheet formula or carrying Markdown/HTML reaches no CSV cell,
report.md or caption as something that runs or loads (OWASP CSV injection; Markdown images and raw HTML)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from planner.batching.requests import make_requests, parse_requests_csv, to_csv
from planner.core.catalog import model_presets
from planner.core.hf_config import parse_config_text
from planner.core.safe_text import csv_cell, display_name, inline_markdown, markdown_cell
from planner.core.scenario import Scenario
from planner.report import report_rows, to_markdown
from planner.report import to_csv as report_csv
from planner.report_plan import ReportRow

FORMULA = "=cmd|'/c calc'!A1"
HOSTILE_NAMES = [FORMULA, "+SUM(A1)", "-2+3", "@SUM(1)", "\t=1", "<script>alert(1)</script>", "![x](https://h/p.png)"]
REAL = json.loads(model_presets()["meta-llama/Llama-3.1-8B"].read_text())


@pytest.mark.parametrize("value", ["=1+1", "+1", "-1", "@A1", "\t1", "\r1"])
def test_csv_cells_starting_with_a_formula_character_get_a_quote(value):
    assert csv_cell(value) == "'" + value


def test_csv_numbers_and_plain_text_are_untouched():
    assert [csv_cell(v) for v in (-2, -0.5, 3, "H100-SXM", "")] == [-2, -0.5, 3, "H100-SXM", ""]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_model_names_are_cleaned_where_they_enter(name):
    spec = parse_config_text(json.dumps(REAL), name=name)
    assert spec.name == display_name(name)
    assert not spec.name.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert not set(spec.name) & set("<>[]!|`\\")


def test_a_10000_character_model_name_is_cut_to_200():
    spec = parse_config_text(json.dumps(REAL), name="m" * 10_000)
    assert len(spec.name) == 200


def _scenario_named(name: str) -> Scenario:
    return Scenario(model_spec=parse_config_text(json.dumps(REAL), name=name))


def test_sizing_report_csv_has_no_formula_cell():
    rows = report_rows(_scenario_named(FORMULA), capacity=None) + [ReportRow("inputs", "note", "=2+2", "", "@x")]
    cells = [c for row in csv.reader(io.StringIO(report_csv(rows))) for c in row]
    assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))]
    assert "'=2+2" in cells and "'@x" in cells


def test_report_markdown_escapes_html_and_images():
    rows = [ReportRow("inputs", "<img src=x onerror=alert(1)>", "![p](https://h/p.png)", "", "<script>x</script>|")]
    md = to_markdown(rows, title="Sizing report: <script>")
    assert "<script>" not in md and "<img" not in md and "![p](" not in md
    assert "&lt;script&gt;" in md and "\\|" in md


def test_batching_csv_export_neutralises_names_and_round_trips_the_numbers():
    text = to_csv(make_requests([0, 1], [5, 6], [10, 20], names=[FORMULA, "ok"]))
    first = next(csv.DictReader(io.StringIO(text)))
    assert first["name"] == "'" + FORMULA and first["output_tokens"] == "5"
    back = parse_requests_csv(text)
    assert back.output_tokens == [5, 6]


def test_markdown_helpers():
    assert markdown_cell("a|b\nc") == "a\\|b c"
    assert inline_markdown("![x](u) <b>") == "!\\[x\\](u) \\<b>"
    assert inline_markdown("max_num_seqs: must be >= 1") == "max_num_seqs: must be >= 1"
