"""The sizing report: exact CSV columns, every input present, numbers equal to the planner's, charts as PNG."""
from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest

from planner.latency.metrics import estimate
from planner.memory.plan import plan_memory, tp_options
from planner.report import COLUMNS, report_rows, to_csv, to_json, to_markdown
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment

SCENARIO = Scenario(gpu="A100-80GB", context_tokens=4096, deployment=Deployment(max_model_len=8192, block_size=32))


@pytest.fixture(scope="module")
def rows():
    return report_rows(SCENARIO)


def table(rows) -> dict[tuple[str, str], object]:
    return {(r.section, r.name): r.value for r in rows}


def test_csv_columns_are_exact(rows):
    parsed = list(csv.reader(io.StringIO(to_csv(rows))))
    assert parsed[0] == ["section", "name", "value", "unit", "note"] == list(COLUMNS)
    assert all(len(line) == 5 for line in parsed) and len(parsed) == len(rows) + 1


def test_every_input_is_present(rows):
    t = table(rows)
    r = resolve(SCENARIO)
    for field, value in r.deployment.model_dump().items():  # batch limits resolved to the GPU's vLLM defaults
        assert ("input: engine", field) in t
        assert t[("input: engine", field)] == ("" if value is None else value)
    assert t[("input: model", "model")] == r.model.name
    for field in ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "head_dim", "vocab_size"):
        assert t[("input: model", field)] == getattr(r.model, field)
    assert t[("input: GPU", "gpu")] == "A100-80GB"
    assert t[("input: GPU", "memory_gb")] == r.gpu.memory_gb
    assert t[("input: precision", "weights")] == "bf16" and t[("input: precision", "kv_bytes_per_value")] == 2.0
    assert t[("input: workload", "context_tokens")] == 4096
    assert t[("input: engine", "max_model_len (resolved)")] == 8192


def test_numbers_equal_planner_outputs(rows):
    t = table(rows)
    r = resolve(SCENARIO)
    plan = plan_memory(r)
    for name in ("params", "weight_bytes", "kv_bytes_per_token", "kv_bytes_per_request", "textbook_max_requests"):
        assert t[("memory (textbook)", name)] == getattr(plan, name)
    for name in ("num_gpu_blocks", "kv_cache_tokens", "max_concurrency", "paged_max_requests"):
        assert t[("memory (vLLM)", name)] == getattr(plan, name)
    for opt in tp_options(r):
        assert t[("tensor-parallel options", f"TP={opt['tp']} kv_cache_tokens")] == opt["kv_cache_tokens"]
    e = estimate(r, 1, 4096 - 300, 300)
    assert t[("latency (batch 1)", "tpot_s")] == e.tpot_s
    assert t[("latency (batch 1)", "e2e_s")] == e.e2e_s


def test_every_row_has_a_note_or_is_an_identifier(rows):
    numeric = [r for r in rows if isinstance(r.value, (int, float)) and not isinstance(r.value, bool)
               and r.section.startswith(("memory", "latency", "tensor"))]
    assert numeric and all(r.note for r in numeric)


def test_json_round_trips(rows):
    data = json.loads(to_json(rows))
    assert [list(d) for d in data[:1]] == [list(COLUMNS)] and len(data) == len(rows)


def test_markdown_has_tables_and_png_references(rows):
    md = to_markdown(rows, {"memory_per_gpu": b"\x89PNG", "concurrency_vs_context": b"\x89PNG"})
    assert "| name | value | unit | note |" in md
    assert "![memory per gpu](memory_per_gpu.png)" in md and "(concurrency_vs_context.png)" in md
    assert "## memory (vLLM)" in md
    assert ".png" not in to_markdown(rows)


def test_model_that_does_not_fit_still_reports(rows):
    t = table(report_rows(Scenario(model="meta-llama/Llama-3.1-70B", context_tokens=4096)))
    assert t[("memory (vLLM)", "fits")] is False
    assert ("latency", "estimate") in t  # says why there is no estimate


@pytest.mark.slow
def test_zip_with_kaleido_pngs():
    from ui.report import report_zip  # renders with kaleido and Debian's chromium

    z = zipfile.ZipFile(io.BytesIO(report_zip(SCENARIO)))
    names = set(z.namelist())
    assert {"report.md", "report.csv", "memory_per_gpu.png", "concurrency_vs_context.png"} <= names
    md = z.read("report.md").decode()
    for png in (n for n in names if n.endswith(".png")):
        assert z.read(png).startswith(b"\x89PNG\r\n\x1a\n")
        assert f"({png})" in md
