"""Headless test of app_pages/batching.py: primer numbers on first load, sliders rerun, scenarios, CSV upload."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

PAGE = str(ROOT / "app_pages" / "batching.py")


def load() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=30).run()
    assert not at.exception
    return at


def metrics(at: AppTest) -> dict[str, str]:
    """Metric values by label; the two policy rows come first (5 each) and get a "Static: " / "Continuous: " prefix."""
    out = {}
    for i, m in enumerate(at.metric):
        prefix = "Static: " if i < 5 else "Continuous: " if i < 10 else ""
        out[prefix + m.label] = m.value
    return out


def test_first_load_shows_primer_six():
    at = load()
    m = metrics(at)
    assert m["Static: Done at step"] == "13" and m["Continuous: Done at step"] == "9"
    assert m["Static: GPU busy"] == "61.5%" and m["Continuous: GPU busy"] == "88.9%"
    assert m["Static: Average wait (steps)"] == "4.00" and m["Continuous: Average wait (steps)"] == "1.83"
    for label in m:  # every wait and latency figure says it is counted in steps (issue 16)
        if "wait" in label.lower() or "latency" in label.lower():
            assert label.endswith("(steps)"), label


def test_gantt_side_by_side_hover_names_requests():
    at = load()
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = {row[0] for trace in fig["data"] for row in trace.get("customdata", [])}
    assert names == set("ABCDEF")
    assert {trace["xaxis"] for trace in fig["data"]} == {"x", "x2"}  # two panels: static, continuous
    assert any("slot held" in trace["name"] for trace in fig["data"])  # static's idle held slots


def test_slider_reruns():
    at = load()
    at.slider(key="batching_slots").set_value(6).run()
    assert not at.exception
    m = metrics(at)
    # 6 slots: all six start at 0; both finish with B at step 8
    assert m["Static: Done at step"] == "8" and m["Continuous: Done at step"] == "8"
    at.slider(key="batching_spread").set_value(0.0).run()
    assert not at.exception


def test_scenario_switch_sets_textbook_defaults():
    at = load()
    at.radio(key="batching_source").set_value("steady").run()
    assert not at.exception
    assert at.slider(key="batching_slots").value == 8 and at.slider(key="batching_max_wait").value == 20
    m = metrics(at)
    assert int(m["Static: Done at step"].replace(",", "")) > int(m["Continuous: Done at step"].replace(",", ""))


def test_dynamic_batcher_queue_limit_and_bucketing():
    at = load()
    at.radio(key="batching_source").set_value("burst").run()
    at.slider(key="batching_dyn_queue_limit").set_value(20).run()
    assert not at.exception
    m = metrics(at)
    assert m["Rejected"] == f"{200 - 8 - 20}"  # 8 start, 20 wait, the rest are turned away
    assert float(m["Padding saved"].rstrip("%")) > 0


def test_upload_good_and_bad_csv():
    at = load()
    at.radio(key="batching_source").set_value("upload").run()
    assert not at.exception and at.info  # guard until a file arrives
    at.file_uploader(key="batching_upload").set_value(
        ("r.csv", b"name,arrival,output_tokens\nA,0,2\nB,0,8\nC,0,4\nD,0,3\nE,0,5\nF,0,2\n", "text/csv")
    ).run()
    assert not at.exception
    assert metrics(at)["Static: Done at step"] == "13"
    at.file_uploader(key="batching_upload").set_value(
        ("bad.csv", b"name,arrival,output_tokens\nA,0,2\nB,zero,8\n", "text/csv")
    ).run()
    assert not at.exception
    assert "row 2, column arrival" in at.error[0].value
    assert at.slider(key="batching_slots").value == 3  # the other inputs stay


def test_both_cdf_panels_in_percent():
    at = load()
    cdf = next(
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if "latency = finished − arrival" in c.proto.spec or "latency = finished \\u2212 arrival" in c.proto.spec
    )
    layout = cdf["layout"]
    assert layout["yaxis"]["tickformat"] == layout["yaxis2"]["tickformat"] == ".0%"  # the right one was 0–1
