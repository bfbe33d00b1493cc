"""Headless test of app_pages/techniques.py: every tab runs and shows its key numbers; widgets rerun it; reruns are
fast."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.scenario import Scenario
from planner.core.workload import TrafficSpec

PRIMER = TrafficSpec(profile="custom", prompt="fixed:2000", output="fixed:300")

PAGE = str(ROOT / "app_pages" / "techniques.py")
TABS = [
    "Speculative decoding",
    "Prefix caching",
    "PagedAttention",
    "FlashAttention",
    "Quantization",
    "Tensor parallelism",
    "Multi-LoRA",
]
KEY_METRICS = {
    "Speculative decoding": ("Expected tokens per pass", "Speed-up at batch 8", "Best k", "Draft weights per GPU"),
    "Prefix caching": ("TTFT, given rates", "TTFT, roofline", "Prefill FLOPs saved", "KV blocks saved"),
    "PagedAttention": ("Contiguous: max requests", "Paged: max requests", "Paged: memory wasted"),
    "FlashAttention": ("Standard: scores per layer", "FlashAttention: HBM", "Less HBM for scores"),
    "Quantization": ("KV per token, every format", "Fastest decode at batch 1", "Most requests"),
    "Tensor parallelism": ("Smallest TP that fits", "Lowest TPOT (batch 1)", "Most tokens/s per GPU"),
    "Multi-LoRA": ("One adapter", "4 slots per GPU", "Max requests", "Adapters that fit"),
}


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def open_tab(at: AppTest, label: str) -> AppTest:
    at.session_state["tech_tab"] = label
    return at.run()


@pytest.fixture(scope="module")
def at() -> AppTest:
    t = AppTest.from_file(PAGE, default_timeout=60)
    t.session_state["scenario"] = Scenario(traffic=PRIMER)  # the primer's 2,000 + 300-token request
    return t.run()


@pytest.mark.parametrize("tab", TABS)
def test_each_tab_runs_and_shows_its_key_numbers(at, tab):
    open_tab(at, tab)
    assert not at.exception
    assert not at.error
    m = metrics(at)
    for label in KEY_METRICS[tab]:
        assert label in m, (tab, label, list(m))
    assert at.get("plotly_chart"), tab
    assert any(e.label.startswith("Formula") for e in at.expander), tab


def test_pinned_figures_on_defaults(at):
    m = metrics(open_tab(at, "Speculative decoding"))
    assert m["Expected tokens per pass"] == "3.36"  # α 0.8, k 4
    assert "3 accepted + 1 from the target = 4 tokens" in " ".join(at.table[0].value["what"])
    assert metrics(open_tab(at, "Prefix caching"))["TTFT, given rates"] == "240 → 90 ms"
    assert metrics(open_tab(at, "Quantization"))["KV per token, every format"] == "131,072 B"
    assert metrics(open_tab(at, "FlashAttention"))["Less HBM for scores"] == "1,000×"  # 2,000 × 2 B / 4 B
    m = metrics(open_tab(at, "Multi-LoRA"))
    # Llama-3.1-8B rank 16 on q,k,v,o (8 KV heads × 128 = 1,024 for k and v):
    # 16 × [(4096 + 4096) + 2 × (4096 + 1024) + (4096 + 4096)] × 32 layers × 2 B = 27,262,976 B
    assert m["One adapter"] == "27.26 MB"


def test_widget_change_reruns_and_values_survive_a_tab_switch(at):
    open_tab(at, "Speculative decoding")
    at.slider(key="tech_alpha").set_value(0.5).run()
    assert not at.exception
    assert metrics(at)["Expected tokens per pass"] == "1.94"  # (1 − 0.5^5) / 0.5 = 1.9375
    open_tab(at, "Prefix caching")
    at.number_input(key="tech_prefix").set_value(1000).run()
    assert metrics(at)["TTFT, given rates"] == "240 → 140 ms"
    open_tab(at, "Speculative decoding")
    assert at.slider(key="tech_alpha").value == 0.5
    at.number_input(key="tech_batch").set_value(256).run()
    assert "Speed-up at batch 256" in metrics(at)


def test_mooncake_hit_rate_behind_a_button(at):
    open_tab(at, "Prefix caching")
    at.button(key="tech_mooncake").click().run()
    assert not at.exception
    m = metrics(at)
    for label in ("Mooncake hit rate (infinite cache)", "Mooncake hit rate (LRU, your KV pool)"):
        assert 0 < float(m[label].rstrip("%")) < 100


def test_charts_have_titles(at):
    open_tab(at, "Speculative decoding")
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    titles = [c["layout"]["title"]["text"] for c in specs]
    assert any("Best k" in t for t in titles)
    # the speed-up chart's title says what its curves do (issue 16: "fades" was printed over rising curves)
    speed = next(c for c in specs if c["layout"]["title"]["text"].startswith("Speed-up"))
    curves = [_values(tr["y"]) for tr in speed["data"] if str(tr.get("name", "")).startswith("k = ")]
    first, last = max(y[0] for y in curves), max(y[-1] for y in curves)
    word = "fades" if last < first * 0.95 else "grows" if last > first * 1.05 else "holds"
    assert word in speed["layout"]["title"]["text"]


def _values(y) -> np.ndarray:
    """A plotly JSON array: a list, or {"dtype", "bdata"} (base64 of the numpy buffer)."""
    return np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]) if isinstance(y, dict) else np.asarray(y)


def test_the_page_prices_techniques_with_the_scenarios_engine_as_the_cli_does():
    import pandas as pd

    from planner.core.scenario import resolve
    from planner.techniques import prefix_cache as pc
    from planner.techniques.tensor_parallel import compare_tp
    from ui.techniques import data

    for engine in ("vllm", "tensorrt-llm"):
        sj = Scenario(engine=engine).model_dump_json()
        page = data.prefix(sj, 2000, 2300, 1500, 16, 0.5, 0.04, 10_000.0)
        cli = pc.prefix_report(resolve(Scenario(engine=engine)), 2000, 2300, 1500, 0.5, 16, 0.04, 10_000.0)
        assert page == cli
        tp_cli = pd.DataFrame(compare_tp(resolve(Scenario(engine=engine)), 8, 2150, request_tokens=2300))
        assert data.tp(sj, 8, 2150, 2300).equals(tp_cli)
    vllm, trt = (
        data.prefix(Scenario(engine=e).model_dump_json(), 2000, 2300, 1500, 16, 0.5, 0.04, 1e4)
        for e in ("vllm", "tensorrt-llm")
    )
    assert vllm != trt  # the engine's profile moves the roofline TTFT


def test_spec_head_without_a_published_acceptance_says_so_and_assumes_nothing():
    # Llama-3.1-8B has no published EAGLE-3 / MTP row: no speed-up until the user enters a measured value
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["scenario"] = Scenario(traffic=PRIMER)
    at.session_state["tech_tab"] = "Speculative decoding"
    at.run()
    assert any("Nothing is assumed" in i.value for i in at.info)
    assert not any(label.startswith("Priced speed-up") for label in metrics(at))
    at.number_input(key="tech_head_al").set_value(2.5).run()
    at.number_input(key="tech_head_k_eagle3_None").set_value(3).run()
    shown = metrics(at)
    assert shown["Acceptance length"] == "2.5"
    # 32 layers: 2.5 / (1 + 3/32) = 2.286
    assert shown["Memory-bound hand formula"] == "2.286×"


def test_spec_head_uses_the_published_row_for_the_model():
    t = AppTest.from_file(PAGE, default_timeout=60)
    t.session_state["scenario"] = Scenario(model="Qwen/Qwen3-8B", traffic=PRIMER)
    t.session_state["tech_tab"] = "Speculative decoding"
    t.run()
    assert not t.exception
    shown = metrics(t)
    assert shown["Acceptance length"] == "1.97"  # AngelSlim EAGLE-3 on Qwen3-8B, MT-bench (the first row)
    assert any("AngelSlim" in c.value for c in t.caption)
