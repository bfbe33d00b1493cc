"""Headless test of app_pages/capacity.py: the default render (one capacity search), the ranking button, bad input."""

from __future__ import annotations

import json

import pytest
from apptest_helpers import app
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.scenario import Scenario
from planner.core.workload import SLO

PAGE = str(ROOT / "app_pages" / "capacity.py")


def load() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_default_render_shows_capacity_replicas_cost_and_a_day():
    at = load()
    m = metrics(at)
    for label in (
        "Capacity per replica (req/s)",
        "Replicas",
        "$ per hour",
        "$ per million output tokens",
        "Requests in SLO-violating minutes",
        "Replica-hours (autoscaled)",
        "vs static peak",
    ):
        assert label in m, label
    assert int(m["Replicas"]) >= 1 and m["$ per hour"].startswith("$")
    assert len(at.get("plotly_chart")) == 2  # search probes + the day
    assert at.button(key="cap_rank") is not None
    assert any(c.value.startswith("Scheduler of vLLM: vllm-v1 (") for c in at.caption)  # the engine's policy


def test_default_price_comes_from_the_catalogue():
    """H100-SXM at $2.69 per GPU-hour (data/gpus.yaml); AppTest cannot drive st.data_editor, so the override
    path is tested through capacity_plan(prices=...) in test_capacity.py."""
    at = load()
    cost = next(m for m in at.metric if m.label == "$ per hour")
    assert "$2.69 per GPU-hour" in cost.help


@pytest.mark.slow  # ~50 s on 2 cores: the ranking simulates every candidate deployment
def test_ranking_runs_behind_the_button_on_a_subset():
    at = load()
    at.session_state["scenario"] = Scenario(target_rate=5.0)  # the sidebar's workload: target 5 req/s
    at.run()
    at.button(key="cap_rank").click().run(timeout=300)
    assert not at.exception, at.exception
    rows = at.session_state["cap_ranking"][1]
    assert len(rows) >= 40 and rows[0]["rank"] == 1
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any(t.get("name") == "Pareto frontier" for s in specs for t in s["data"])
    # the table is for people: named columns with units, rounded (issue 16: snake_case and 4 decimals)
    shown = next(d for d in at.dataframe if "deployment" in d.value.columns)
    assert shown.proto.placeholder == "–"  # a row not searched shows "–", not "None" (issue 27)
    table = shown.value
    assert {"deployment", "req/s per replica", "$ per hour", "p95 TTFT (ms)", "p95 TPOT (ms)"} <= set(table.columns)
    assert not [c for c in table.columns if "_" in c]
    assert (table["$ per hour"].dropna() == table["$ per hour"].dropna().round(2)).all()
    # "Use this deployment" queues the ranked deployment for the sidebar
    feasible = [r for r in rows if r["feasible"]]
    at.selectbox(key="cap_use_pick").set_value(1).run()
    at.button(key="cap_use").click().run(timeout=300)
    pending = at.session_state["sb_pending_scenario"]
    assert (pending.gpu, pending.deployment.weights, pending.deployment.tensor_parallel_size) == (
        feasible[1]["gpu"],
        feasible[1]["weights"],
        feasible[1]["tp"],
    )
    assert pending.target_rate == 5.0  # the workload stays


def test_a_used_deployment_lands_in_the_sidebar():
    from planner.core.scenario import with_deployment

    chosen = with_deployment(Scenario(), "A100-80GB", "awq-int4", 2, 6)
    at = app(sb_pending_scenario=chosen, sb_pending_message="Loaded A100-80GB")
    assert not at.exception
    assert (
        at.session_state["sb_gpu"],
        at.session_state["sb_weights"],
        at.session_state["sb_tp"],
        at.session_state["sb_num_gpus"],
    ) == ("A100-80GB", "awq-int4", 2, 6)
    assert at.session_state["scenario"].deployment == chosen.deployment
    assert [t.value for t in at.toast] == ["Loaded A100-80GB"]


def test_tight_slo_is_reported_not_a_traceback():
    at = load()
    at.session_state["scenario"] = Scenario(slo=SLO(ttft_p95_s=0.01))  # the sidebar's SLO: p95 TTFT ≤ 10 ms
    at.run()
    assert not at.exception
    assert any("cannot meet this SLO" in w.value for w in at.warning)


def test_the_ranked_row_is_the_plan_and_using_it_keeps_the_ranking(monkeypatch):
    import planner.capacity.recommend as rec
    from planner.core.workload import TrafficSpec

    every = rec.candidates
    monkeypatch.setattr(rec, "candidates", lambda s, *a, **k: every(s, ["L40S", "A10G"], None, (1, 2)))
    small = Scenario(target_rate=5.0, traffic=TrafficSpec(num_requests=200))
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["scenario"] = small
    at.run()
    at.button(key="cap_rank").click().run(timeout=600)
    assert not at.exception, at.exception
    rows = at.session_state["cap_ranking"][1]
    best = rows[0]
    at.button(key="cap_use").click().run(timeout=300)  # the sidebar applies the queued scenario on the next run
    at.session_state["scenario"] = at.session_state["sb_pending_scenario"]
    at.run(timeout=300)
    assert not at.exception, at.exception
    m = metrics(at)
    assert m["Replicas"] == str(best["replicas"])
    assert float(m["$ per hour"].lstrip("$").replace(",", "")) == pytest.approx(best["usd_per_hour"], abs=0.005)
    assert m["Capacity per replica (req/s)"] == f"{best['max_rate_per_replica']:,.3g}"
    assert best["feasible"] and at.get("plotly_chart") and at.dataframe  # the ranking is still on the page
    assert not [i for i in at.info if "inputs changed" in i.value]


def test_the_static_fleet_is_never_below_the_autoscaled_peak():
    at = load()
    day = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "Replicas" in c.proto.spec)
    traces = {t["name"]: t for t in day["data"]}

    def ys(trace):
        from test_page_traffic import values

        return values(trace["y"])

    assert ys(traces["static peak"]).min() >= ys(traces["ready replicas"]).max()  # was 7 against 8


def test_probe_chart_shows_both_targets_and_labels_each_failure_once():
    at = load()
    probes = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "TTFT target" in c.proto.spec)
    titles = [a.get("text", "") for a in probes["layout"]["annotations"]]
    assert "p95 TPOT (ms)" in titles and "TPOT target" in titles  # TPOT may bind: it is drawn too
    assert all(titles)  # an annotation without text draws plotly's placeholder "new text"
    labels = [t for tr in probes["data"] for t in (tr.get("text") or []) if t]
    assert labels and len(labels) == len(set(labels))  # one label per failed criterion, not one per probe
    header = next(h.value for h in at.header if "per replica" in h.value)
    assert "((" not in header and "))" not in header


def _values(xs) -> list[float]:
    """A trace's x values from the chart's JSON (plotly encodes numpy arrays as base64 typed arrays)."""
    import base64

    import numpy as np

    if isinstance(xs, dict) and "bdata" in xs:
        return list(np.frombuffer(base64.b64decode(xs["bdata"]), dtype=xs["dtype"]))
    return list(xs or [])


def test_a_data_parallel_instance_is_one_replica_of_all_its_gpus():
    # issue 27 #2: DeepSeek-V3 TP 1 × DP 8 + EP 8 was headed "1 × H200 per replica" (an instance is 8 GPUs), and
    # the probes were drawn at one DP rank's rate beside the capacity line of the whole instance
    from planner.core.specs import Deployment
    from planner.core.workload import TrafficSpec

    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["scenario"] = Scenario(
        deployment=Deployment(num_gpus=2, data_parallel_size=2), traffic=TrafficSpec(num_requests=200)
    )
    at.run()
    assert not at.exception, at.exception
    header = next(h.value for h in at.header if "per replica" in h.value)
    assert "on 2 × H100-SXM per replica (TP 1 × DP 2)" in header
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "TTFT target" in c.proto.spec)
    rates = [x for tr in chart["data"] for x in _values(tr.get("x"))]
    capacity = float(metrics(at)["Capacity per replica (req/s)"].replace(",", ""))
    assert min(rates) < capacity < max(rates)  # the capacity sits among the probes of the same instance


def test_a_prompt_pool_is_named_and_lifts_the_capacity():
    # Llama-3.1-8B on one H100, 2,000 / 100 tokens: the capacity search found 14.4 req/s per replica with every
    # prompt new and 121.7 with 20 distinct prompts (a repeat prefills 16 tokens; CLI `capacity --prompt-pool 20`)
    from planner.core.workload import TrafficSpec

    def capacity(pool: int) -> tuple[float, list[str]]:
        at = AppTest.from_file(PAGE, default_timeout=240)
        at.session_state["scenario"] = Scenario(
            traffic=TrafficSpec(profile="custom", prompt="fixed:2000", output="fixed:100", prompt_pool=pool)
        )
        at.run()
        assert not at.exception, at.exception
        return float(metrics(at)["Capacity per replica (req/s)"].replace(",", "")), [c.value for c in at.caption]

    fresh, _ = capacity(0)
    pooled, captions = capacity(20)
    assert any("prompts drawn from **20** distinct ones" in c for c in captions)
    assert pooled > 5 * fresh


def test_a_deployment_that_does_not_fit_shows_the_fit_error_not_a_price():
    # issue 56 #2: Qwen3.5-35B-A3B on one H100 ("Does not fit … vLLM refuses to start") was priced at $10.76/h
    at = load()
    at.session_state["scenario"] = Scenario(model="Qwen/Qwen3.5-35B-A3B", gpu="H100-SXM")
    at.run()
    assert not at.exception
    assert any("vLLM refuses to start" in e.value and "No capacity or cost" in e.value for e in at.error), [
        e.value for e in at.error
    ]
    assert "$ per hour" not in metrics(at)
