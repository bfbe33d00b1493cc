"""The Validation page, headless: published errors, a pasted calibration, bad uploads, the load-test plan."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.scenario import Scenario
from planner.core.workload import TrafficSpec
from planner.latency.efficiency import EfficiencyProfile

FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture
def page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app_pages" / "validation.py"), default_timeout=60)
    return at.run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_default_page_shows_the_published_errors(page):
    assert not page.exception and not page.error
    m = metrics(page)
    assert m["Latency points predicted"] == "148 of 168"  # published_points.csv + published_points_2.csv
    assert m["Median |error|"].endswith("%") and m["KV capacity: median |error|"].endswith("%")
    parity = json.loads(page.get("plotly_chart")[0].proto.spec)
    assert parity["data"][0]["name"] == "y = x"
    names = {t["name"] for t in parity["data"][3:]}  # one trace per metric after y = x and the ±25 % lines
    assert {"token_time (TBT/TPOT)", "generation_speed", "gpu_blocks (vLLM KV capacity)"} <= names
    # 14 latency metrics + the KV capacity, less the ITL slope (~7e-4 ms) kept off the log axes; rows in seconds
    # (LMDeploy's TTFT and ITL) are drawn in ms
    assert len(names) == 14 and "token_latency_p50 (decode ITL)" in names
    assert "C215" in parity["layout"]["title"]["text"]
    assert any(set(d.value.columns) >= {"source", "metric", "gpu", "median |error| %"} for d in page.dataframe)
    assert any("calibration" in d.value.columns for d in page.dataframe)
    assert "calibration_profile" not in page.session_state
    # the out-of-sample errors recorded by validation/accuracy_out_of_sample.py --write, per group by default
    oos = next(d.value for d in page.dataframe if "LOFO" in d.value.columns)
    assert set(oos["group"]) == {"decode", "prefill", "throughput"} and {"in-sample", "LOEO"} <= set(oos.columns)


def test_the_page_shows_the_serving_rows_out_of_sample_and_the_targets_they_miss(page):
    # data/accuracy_aiconfigurator.yaml (validation/accuracy_loo --write), read here on its own: one row per kind of
    # hold-out, the caption naming exactly the kinds whose median misses a target, a kind's groups on request
    import yaml

    from planner.accuracy.validation import SERVING_OUT_OF_SAMPLE_PATH

    doc = yaml.safe_load(SERVING_OUT_OF_SAMPLE_PATH.read_text(encoding="utf-8"))
    table = next(d.value for d in page.dataframe if "held out" in d.value.columns)
    kinds = ["in sample", "one source out", "one model out", "one GPU out", "one engine out", "all kinds"]
    assert list(table["held out"]) == kinds
    engine_out = doc["leave_one_engine_out"]["all"]
    row = table.set_index("held out").loc["one engine out"]
    assert row["TTFT median |error| %"] == engine_out["ttft_median_abs_pct"] and row["rows"] == engine_out["rows"]
    keys = [
        "leave_one_source_out",
        "leave_one_model_out",
        "leave_one_gpu_out",
        "leave_one_engine_out",
        "out_of_sample_all_kinds",
    ]
    missed = [
        f"{name} {kind} ({doc[key].get('all', doc[key])[f'{m}_median_abs_pct']:.1f}%)"
        for key, kind in zip(keys, kinds[1:])
        for m, name in (("ttft", "TTFT"), ("tpot", "TPOT"), ("throughput", "throughput"))
        if doc[key].get("all", doc[key])[f"{m}_median_abs_pct"] > doc["targets_pct"][m]
    ]
    caption = next(c.value for c in page.caption if "Targets (median, out of sample)" in c.value)
    assert (f"Above target: {'; '.join(missed)}." if missed else "Every target met.") in caption
    page.selectbox(key="val_loo_kind").set_value("one engine out").run()
    groups = next(d.value for d in page.dataframe if "group" in d.value.columns and "TTFT median signed %" in d.value)
    assert set(groups["group"]) >= {"sglang", "tensorrt-llm", "vllm"}


def test_colour_choice_regroups_the_scatter(page):
    page.selectbox(key="val_color").set_value("gpu").run()
    names = {t["name"] for t in json.loads(page.get("plotly_chart")[0].proto.spec)["data"]}
    assert {"A100-80GB", "H100-SXM"} <= names


def test_pasted_results_are_fitted_and_applied(page):
    page.text_area(key="val_paste").set_value((FIXTURES / "user_points.csv").read_text()).run()
    assert not page.exception and not page.error
    m = metrics(page)
    assert m["Points read"] == "5 (csv)"
    before, after = (float(m[k].rstrip("%")) for k in ("Median |error| before", "Median |error| after"))
    assert after < before
    prof = page.session_state["calibration_profile"]
    assert isinstance(prof, EfficiencyProfile) and prof.status == "calibrated"
    assert page.session_state["calibration_target"]["gpu_family"] == "hopper"
    assert any("TPOT calibrated (ms)" in d.value.columns for d in page.dataframe)
    page.toggle(key="val_apply").set_value(False).run()
    assert "calibration_profile" not in page.session_state


def test_guidellm_report_names_its_approximation(page):
    page.text_area(key="val_paste").set_value((FIXTURES / "guidellm.json").read_text()).run()
    assert not page.exception
    assert metrics(page)["Points read"] == "2 (guidellm)"
    assert any("concurrency" in c.value for c in page.caption)


@pytest.mark.parametrize(
    "name, field", [("bad_nonnumeric.csv", "row 3, column output_tokens"), ("bad_nan.json", "result.mean_ttft_ms")]
)
def test_bad_upload_is_named_and_the_page_lives_on(page, name, field):
    page.text_area(key="val_paste").set_value((FIXTURES / name).read_text()).run()
    assert not page.exception
    assert any(field in e.value for e in page.error)
    assert any("vllm serve" in c.value for c in page.code)  # the load-test plan still renders


def test_load_test_plan_follows_the_inputs(page):
    serve = page.code[0].value
    assert serve.startswith("vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1")
    # the lengths are the scenario's (the sidebar's Workload and SLO), not a second set of inputs on this page
    page.session_state["scenario"] = Scenario(
        traffic=TrafficSpec(profile="custom", prompt="fixed:3000", output="fixed:256")
    )
    page.run()
    assert not [w for w in page.number_input if w.key in ("val_input", "val_output")]
    assert "--random-input-len 3000" in page.code[1].value
    assert "prompt_tokens=3000" in page.code[2].value


def test_fourteen_metrics_get_fourteen_distinct_legend_keys(page):
    parity = json.loads(page.get("plotly_chart")[0].proto.spec)
    keys = [
        (t["marker"]["color"], t["marker"].get("symbol", "circle"))
        for t in parity["data"]
        if t.get("mode") == "markers"
    ]
    assert len(keys) == 14 and len(set(keys)) == 14  # 10 colours repeated: two metrics looked the same


@pytest.mark.parametrize(
    "doc, field",
    [
        ({"mean_e2el_ms": "abc"}, "result.mean_e2el_ms"),  # issue 57: a TypeError on the page before
        ({"max_concurrency": [[16]]}, "result.max_concurrency"),
    ],
)
def test_a_hostile_result_file_is_one_named_error_on_the_page(page, doc, field):
    base = json.loads((FIXTURES / "benchmark_serving_rate.json").read_text())
    page.text_area(key="val_paste").set_value(json.dumps({**base, **doc})).run()
    assert not page.exception
    assert any(field in e.value for e in page.error)


def test_guidellm_configs_of_the_wrong_type_are_named_on_the_page(page):
    report = json.loads((FIXTURES / "guidellm.json").read_text())
    report["benchmarks"][0]["config"] = [1, 2]  # issue 57: an AttributeError on the page before
    page.text_area(key="val_paste").set_value(json.dumps(report)).run()
    assert not page.exception
    assert any("config: must be an object, got list" in e.value for e in page.error)  # brackets escaped


def test_the_files_model_id_cannot_put_an_image_on_the_page(page):
    base = json.loads((FIXTURES / "benchmark_serving.json").read_text())
    base["model_id"] = "![x](https://example.invalid/pixel.png)"
    page.text_area(key="val_paste").set_value(json.dumps(base)).run()
    assert not page.exception
    (warning,) = [w.value for w in page.warning if "The results name model" in w.value]
    assert "![x](" not in warning and "\\[x\\]" in warning  # escaped: Markdown shows the text, loads nothing
