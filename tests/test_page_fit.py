"""The "Does it fit?" page, headless: default scenario, sidebar changes, bad uploads."""
from __future__ import annotations

import json

from apptest_helpers import app, metrics
from planner.memory.plan import plan_memory
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.core.workload import TrafficSpec
from ui.sidebar import UPLOAD
from ui.workload_widgets import lengths_of


def test_default_scenario_renders_the_key_numbers():
    at = app()
    assert not at.exception
    m = metrics(at)
    assert m["Parameters"] == "8.03 B"  # Llama-3.1-8B
    assert m["Weights per GPU"] == "16.06 GB"
    assert m["KV per token"] == "131,072 B"
    # requests of the default chat profile's mean length (the sidebar's one workload)
    ctx = lengths_of(TrafficSpec()).context_tokens
    assert 1300 < ctx < 1500
    expected = plan_memory(resolve(Scenario(context_tokens=ctx, deployment=Deployment(max_model_len=8192))))
    assert m["Textbook: requests fit"] == f"{expected.textbook_max_requests:,}"
    assert m["vLLM: max concurrency"] == f"{expected.max_concurrency:,.2f}x"
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(charts) == 2 and all(chart["data"] for chart in charts)
    assert len(at.dataframe[0].value) == 4  # TP 1, 2, 4, 8


def test_sidebar_change_updates_the_page():
    at = app(sb_gpu="RTX-4090", sb_weights="awq-int4")
    assert not at.exception
    m = metrics(at)
    assert m["Weights per GPU"] != "16.06 GB"
    assert at.session_state["scenario"].gpu == "RTX-4090"


def test_model_too_big_says_it_does_not_fit():
    at = app(sb_model="meta-llama/Llama-3.1-70B")
    assert not at.exception
    assert any("Does not fit" in e.value for e in at.error)


def test_bad_pasted_config_names_the_field():
    at = app(sb_model=UPLOAD, sb_config_paste='{"hidden_size": 4096, "num_attention_heads": 32}')
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("num_hidden_layers" in e for e in errors), errors
    assert metrics(at)["Parameters"] == "8.03 B"  # the page keeps the default model meanwhile


def test_bad_paste_keeps_the_last_valid_scenario():
    at = app(sb_gpu="A100-80GB")
    at.session_state["sb_model"] = UPLOAD
    at.session_state["sb_config_paste"] = '{"hidden_size": "big"}'
    at.run()
    assert not at.exception
    kept = at.session_state["scenario"]
    assert (kept.model, kept.gpu) == ("meta-llama/Llama-3.1-8B", "A100-80GB")
    assert at.session_state["sb_config_paste"] == '{"hidden_size": "big"}'  # what the user typed stays


def test_truncated_json_is_rejected_with_the_reason():
    at = app(sb_model=UPLOAD, sb_config_paste='{"hidden_size": 40')
    assert any("not valid JSON" in e.value for e in at.error)


def test_pasted_config_is_used():
    cfg = {"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 4,
           "intermediate_size": 8192, "vocab_size": 32000, "max_position_embeddings": 8192}
    at = app(sb_model=UPLOAD, sb_config_paste=json.dumps(cfg))
    assert not at.error and not at.exception
    assert at.session_state["scenario"].model_spec.num_layers == 16
