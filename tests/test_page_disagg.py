"""Headless test of app_pages/disagg.py: layouts, the disaggregation verdict, the ratio sweep and the walkthrough."""

from __future__ import annotations

import json

from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.scenario import Scenario
from planner.core.specs import Deployment
from ui.state import SCENARIO_KEY

PAGE = str(ROOT / "app_pages" / "disagg.py")


def load(scenario: Scenario | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    if scenario is not None:
        at.session_state[SCENARIO_KEY] = scenario
    at.run()
    assert not at.exception, at.exception
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_llama70b_long_prompts_default_render():
    at = load(
        Scenario(
            model="meta-llama/Llama-3.1-70B", gpu="H100-SXM", deployment=Deployment(weights="bf16", max_model_len=32768)
        )
    )
    m = metrics(at)
    for label in (
        "Prefill pool",
        "Decode pool",
        "GPUs: disaggregated / aggregated",
        "KV transfer share of TTFT",
        "$ per hour, disaggregated",
        "$ per hour, aggregated",
        "Verdict",
    ):
        assert label in m, label
    assert "TP" in m["Prefill pool"] and m["Verdict"] in ("disaggregate", "stay aggregated")
    assert len(at.get("plotly_chart")) == 4  # layouts, step parts, cost, ratio
    text = " ".join(md.value for md in at.markdown)
    assert "Prefill instances = ceil(" in text and "KV transfer =" in text
    assert "Gain from disaggregating" in text  # the walkthrough with the page's numbers
    layouts = next(d.value for d in at.dataframe if "layout" in d.value.columns)
    speeds = layouts["tokens_per_s"].dropna()
    assert len(speeds) and (speeds == speeds.round()).all()  # whole tokens/s (issue 27: 7,270.046 tokens/s)


def test_deepseek_v3_dp8_ep8_holds_more_requests_than_tp8():
    at = load(
        Scenario(
            model="deepseek-ai/DeepSeek-V3",
            gpu="H200",
            deployment=Deployment(num_gpus=8, tensor_parallel_size=8, weights="fp8", max_model_len=32768),
        )
    )
    table = at.dataframe[0].value.set_index("layout")
    assert table.loc["TP 8", "max_concurrency"] == 15
    assert table.loc["TP 1 × DP 8 + EP 8", "max_concurrency"] == 104  # tests/test_parallel_memory.py by hand
    assert table.loc["TP 1 × DP 8 + EP 8", "all_to_all_ms"] > 0 == table.loc["TP 8", "all_to_all_ms"]
    assert any("MLA's latent" in md.value for md in at.markdown)
    # issue 56: an 8-GPU instance of DP 8 read "1 × TP 1"; the label now says its GPUs and DP
    m = metrics(at)
    assert m["Decode pool"] == "1 × 8 GPU (TP 1 × DP 8, EP 8)" and m["Prefill pool"] == "2 × 8 GPU (TP 8)"
    code = " ".join(c.value for c in at.code)  # its launch line: vLLM DP 8 + expert parallel on one node
    assert "--data-parallel-size 8 --enable-expert-parallel" in code


def test_an_unreachable_ttft_target_says_why_and_stays_aggregated():
    at = load(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=Deployment(max_model_len=8192)))
    at.session_state["dg_prompt"] = 4000
    at.session_state["dg_ttft_ms"] = 10  # below the prefill time of a 4,000-token prompt on any TP
    at.run()
    assert not at.exception
    assert any("Disaggregation cannot meet this SLO" in w.value for w in at.warning)
    assert metrics(at)["Verdict"] == "stay aggregated"


def test_requests_over_max_model_len_name_the_setting_not_the_slo():
    # a mean of 8,000 + 300 tokens against the sidebar's max_model_len 8,192: vLLM would reject them; the page says
    # where to change it instead of reporting an unreachable TTFT (what it did before)
    at = load(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=Deployment(max_model_len=8192)))
    at.session_state["dg_prompt"] = 8000
    at.run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "max_model_len 8,192" in warnings and "Engine settings" in warnings
    assert "cannot meet this SLO" not in warnings


def test_the_default_long_prompts_get_a_prefill_pool():
    at = load(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=Deployment(max_model_len=8192)))
    assert not at.exception
    assert metrics(at)["Prefill pool"] != "infeasible" and metrics(at)["Decode pool"] != "infeasible"


def test_a_model_that_fits_no_layout_gets_a_plain_warning_not_empty_charts():
    at = load(Scenario(model="deepseek-ai/DeepSeek-V3", gpu="L4", deployment=Deployment(weights="fp8")))
    assert not at.exception
    assert any("No layout of" in w.value and "GPUs in one instance" in w.value for w in at.warning)
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert not [sp for sp in specs if not sp["data"]]  # no empty chart (axes −1 to 4)
    shown = next(d for d in at.dataframe if "layout" in d.value.columns)
    table = shown.value
    assert table["fits"].eq(False).all() and table["tokens_per_s"].isna().all()  # no speed for what cannot run
    assert shown.proto.placeholder == "–"  # shown as "–", not Streamlit's "None" (issue 27)
    errors = " ".join(e.value for e in at.error)  # the pools section says why in the app's words too
    assert "starts on this GPU" in errors and "see `memory`" not in errors and "Does it fit?" in errors


def test_the_page_evaluates_a_given_1p1d_layout():
    # the layout the user runs (1P1D, TP 8 + TP 8 over NIXL), evaluated instead of searched
    at = load(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=Deployment(max_model_len=8192)))
    at.toggle(key="dg_given").set_value(True).run()
    assert not at.exception, at.exception
    m = metrics(at)
    assert m["SLO"] in ("met", "missed") and float(m["Hand-off (ms)"]) >= 20.0
    assert float(m["p95 TTFT (ms)"].replace(",", "")) > float(m["Hand-off (ms)"])
    assert any("16 GPUs" in c.value for c in at.caption)


def test_the_given_layout_takes_the_wide_ep_switches():
    # DeepSeek-V3 decode on DP 8 + EP 8 with DeepEP and two-batch overlap (SGLang's flags) changes TPOT
    s = Scenario(model="deepseek-ai/DeepSeek-V3", gpu="H200", deployment=Deployment(weights="fp8", max_model_len=8192))
    at = load(s)
    at.toggle(key="dg_given").set_value(True).run()
    for key, value in (("dg_ptp", 8), ("dg_dtp", 1), ("dg_ddp", 8), ("dg_dep", 8), ("dg_target", 1.0)):
        at.number_input(key=key).set_value(value)
    at.run()
    assert not at.exception, at.exception
    before = metrics(at)["p95 TPOT (ms)"]
    at.selectbox(key="dg_a2a").set_value("deepep")
    at.checkbox(key="dg_tbo").set_value(True)
    at.number_input(key="dg_redundant").set_value(8).run()
    assert not at.exception, at.exception
    assert metrics(at)["p95 TPOT (ms)"] != before


def test_the_recommended_pools_get_their_shape_and_launch_lines():
    at = load(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=Deployment(max_model_len=8192)))
    m = metrics(at)
    for label in ("Prefill pool", "Decode pool"):  # "X × G GPU (TP t[ × DP d], EP e)": the GPUs an instance has
        assert " GPU (TP " in m[label], m[label]
    code = [c.value for c in at.code]
    assert any("vllm serve meta-llama/Llama-3.1-8B" in c and "--kv-transfer-config" in c for c in code)
    assert any("toy_proxy_server.py --prefiller-hosts $PREFILL_HOST_0" in c for c in code)
    at.selectbox(key="dg_launch_engine").set_value("sglang")
    at.selectbox(key="dg_launch_target").set_value("k8s")
    at.run()
    assert not at.exception, at.exception
    code = [c.value for c in at.code]
    assert any("--disaggregation-mode prefill" in c for c in code)
    assert any("kind: Deployment" in c and "name: llama-3-1-8b-router" in c for c in code)
