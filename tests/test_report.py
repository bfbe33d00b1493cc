"""The sizing report: exact CSV columns, every input present, numbers equal to the planner's, charts as PNG."""

from __future__ import annotations

import csv
import io
import json
import math
import zipfile

import pytest

from planner.capacity.capacity_plan import capacity_plan
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.core.workload import SLO, TrafficSpec
from planner.latency.metrics import estimate
from planner.memory.plan import plan_memory
from planner.memory.plan_sweeps import tp_options
from planner.report import COLUMNS, ReportRow, human, report_rows, to_csv, to_json, to_markdown
from planner.report_plan import choice_rows

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
    assert t[("reference: one request alone", "tpot_s")] == e.tpot_s
    assert t[("reference: one request alone", "e2e_s")] == e.e2e_s


def test_every_row_has_a_note_or_is_an_identifier(rows):
    numeric = [
        r
        for r in rows
        if isinstance(r.value, (int, float))
        and not isinstance(r.value, bool)
        and r.section.startswith(("memory", "reference", "tensor", "plan"))
    ]
    assert numeric and all(r.note for r in numeric)


def test_json_round_trips(rows):
    data = json.loads(to_json(rows))
    assert [list(d) for d in data[:1]] == [list(COLUMNS)] and len(data) == len(rows)


def test_markdown_has_tables_and_png_references(rows):
    md = to_markdown(rows, {"memory_per_gpu": b"\x89PNG", "concurrency_vs_context": b"\x89PNG"})
    assert "| name | value | note |" in md  # the value carries its unit: "800.5 ms", never 800.5 with unit s
    assert "![memory per gpu](memory_per_gpu.png)" in md and "(concurrency_vs_context.png)" in md
    assert "## memory (vLLM)" in md
    assert ".png" not in to_markdown(rows)


def test_model_that_does_not_fit_still_reports(rows):
    t = table(report_rows(Scenario(model="meta-llama/Llama-3.1-70B", context_tokens=4096)))
    assert t[("memory (vLLM)", "fits")] is False
    assert ("reference: one request alone", "estimate") in t  # says why there is no estimate
    assert ("plan", "capacity") in t or t[("plan", "slo_holds")] is False  # says why there is no plan


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


# --- the plan (issue 16) -------------------------------------------------------------------------------------------
PLAN_SCENARIO = Scenario(
    model="meta-llama/Llama-3.1-8B",
    gpu="A100-80GB",
    target_rate=20.0,
    traffic=TrafficSpec(profile="custom", prompt="fixed:1000", output="fixed:200", num_requests=400),
    slo=SLO(ttft_p95_s=1.0, tpot_p95_s=0.05),
    deployment=Deployment(max_model_len=8192),
)


@pytest.fixture(scope="module")
def plan_rows_and_capacity():
    s = PLAN_SCENARIO
    return report_rows(s), capacity_plan(s, s.target_rate, s.traffic, s.slo, s.headroom).to_dict()  # flat names


def test_the_plan_leads_the_report(plan_rows_and_capacity):
    rows, cap = plan_rows_and_capacity
    assert rows[0].section == "plan" and rows[0].name == "deployment"
    t = table(rows)
    assert t[("plan", "target_rate")] == 20.0 and t[("plan", "slo_ttft_p95_s")] == 1.0
    for key in (
        "max_rate_per_replica",
        "replicas",
        "num_gpus",
        "usd_per_hour",
        "usd_per_day",
        "usd_per_million_output_tokens",
        "usd_per_million_tokens",
    ):
        assert t[("plan", key)] == cap[key], key
    assert t[("plan", "replicas")] == math.ceil(20.0 * 1.2 / cap["max_rate_per_replica"])
    assert t[("plan", "usd_per_hour")] == pytest.approx(cap["num_gpus"] * cap["usd_per_gpu_hour"])
    units = {(r.section, r.name): r.unit for r in rows}
    assert units[("plan", "usd_per_hour")] == "USD/h" and units[("plan", "max_rate_per_replica")] == "req/s"
    assert t[("plan", "slo_holds")] is True


def test_latency_at_the_operating_point_is_continuous_batching_not_the_pool(plan_rows_and_capacity):
    rows, cap = plan_rows_and_capacity
    t, op = table(rows), cap["operating_point"]
    sec = "latency at the operating point"
    assert t[(sec, "ttft_p95_s")] == op["ttft_p95_s"] <= 1.0  # what Capacity & cost shows, within the SLO
    assert t[(sec, "rate_per_replica")] == pytest.approx(20.0 / cap["replicas"])
    assert t[(sec, "concurrency")] == pytest.approx(op["rate_per_s"] * op["e2e_mean_s"])  # Little's law
    assert not any(r.section.startswith("latency (batch") for r in rows)  # no static batch of the whole pool


def test_runner_up_comes_from_the_ranking():
    r = resolve(PLAN_SCENARIO)
    ranking = [
        {
            "rank": 1,
            "id": "L40S · fp8 · TP1",
            "feasible": True,
            "replicas": 3,
            "usd_per_hour": 2.5,
            "usd_per_million_output_tokens": 0.2,
            "ttft_p95_s": 0.4,
        },
        {
            "rank": 2,
            "id": "A100-80GB · bf16 · TP1",
            "feasible": True,
            "replicas": 2,
            "usd_per_hour": 2.8,
            "usd_per_million_output_tokens": 0.3,
            "ttft_p95_s": 0.3,
        },
    ]
    t = table(choice_rows(PLAN_SCENARIO, r, {}, ranking))
    assert t[("deployment choice", "chosen")] == "A100-80GB · bf16 · TP1"
    assert t[("deployment choice", "runner_up")] == "L40S · fp8 · TP1"
    assert t[("deployment choice", "runner_up_usd_per_hour")] == 2.5


def test_assumptions_name_the_calibration(plan_rows_and_capacity):
    t = table(plan_rows_and_capacity[0])
    assert t[("assumptions", "calibration_status")] in ("calibrated", "partial", "transferred", "estimated")
    assert t[("assumptions", "user_calibration")] == "none"


@pytest.mark.parametrize(
    "value, unit, text",
    [
        (0.8005, "s", "800.5 ms"),
        (2.5, "s", "2.500 s"),
        (166.79999999999998, "USD/h", "$166.80/h"),
        (50.0, "req/s", "50 req/s"),
        (3e9, "B", "3,000,000,000 B (3.00 GB, 2.79 GiB)"),
    ],
)
def test_values_carry_their_units(value, unit, text):
    assert human(value, unit) == text


def test_csv_floats_are_not_noisy():
    out = to_csv([ReportRow("plan", "usd_per_hour", 166.79999999999998, "USD/h")])
    assert out.splitlines()[1] == "plan,usd_per_hour,166.8,USD/h,"
