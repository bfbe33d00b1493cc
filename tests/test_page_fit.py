"""The "Does it fit?" page, headless: default scenario, sidebar changes, bad uploads."""

from __future__ import annotations

import json

import pytest
from apptest_helpers import app, metrics

from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.core.workload import TrafficSpec
from planner.memory.plan import plan_memory
from ui.sidebar import UPLOAD
from ui.workload_widgets import lengths_of


def test_default_scenario_renders_the_key_numbers():
    at = app()
    assert not at.exception
    m = metrics(at)
    assert m["Parameters"] == "8.03 B"  # Llama-3.1-8B
    assert m["Weights per GPU (GB)"] == "16.06 GB"
    assert m["KV per token"] == "131,072 B"
    # requests of the default chat profile's mean length (the sidebar's one workload), the sidebar's limits
    ctx = lengths_of(TrafficSpec()).context_tokens
    assert 1300 < ctx < 1500
    expected = plan_memory(
        resolve(
            Scenario(
                context_tokens=ctx,
                deployment=Deployment(max_model_len=8192),  # batch limits: vLLM's default for the GPU
            )
        )
    )
    assert m["Textbook: requests fit"] == f"{expected.textbook_max_requests:,}"
    assert m["vLLM: max concurrency"] == f"{expected.max_concurrency:,.2f}x"
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(charts) == 2 and all(chart["data"] for chart in charts)
    assert len(at.dataframe[0].value) == 4  # TP 1, 2, 4, 8


def test_sidebar_change_updates_the_page():
    at = app(sb_gpu="RTX-4090", sb_weights="awq-int4")
    assert not at.exception
    m = metrics(at)
    assert m["Weights per GPU (GB)"] != "16.06 GB"
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
    cfg = {
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "intermediate_size": 8192,
        "vocab_size": 32000,
        "max_position_embeddings": 8192,
    }
    at = app(sb_model=UPLOAD, sb_config_paste=json.dumps(cfg))
    assert not at.error and not at.exception
    assert at.session_state["scenario"].model_spec.num_layers == 16


def test_no_metric_mixes_gb_and_gib_without_saying_which():
    at = app()
    for m in at.metric:
        for unit in ("GiB", "GB"):
            if m.value.endswith(f" {unit}"):
                assert f"({unit})" in m.label, (m.label, m.value)  # each labelled with its own unit


def _sidebar_order(at) -> list[str]:
    """The sidebar's elements in drawing order, as 'type:label or value'."""
    out = []

    def walk(node):
        for child in getattr(node, "children", {}).values():
            kind = getattr(child, "type", "")
            if kind in ("error", "selectbox", "text_area", "number_input"):
                out.append(f"{kind}:{getattr(child, 'label', None) or getattr(child, 'value', '')}")
            walk(child)

    walk(at.sidebar)
    return out


def test_config_errors_show_at_the_uploader_not_below_the_sidebar():
    at = app(sb_model=UPLOAD, sb_config_paste='{"hidden_size": 40')
    order = _sidebar_order(at)
    error = next(i for i, e in enumerate(order) if "not valid JSON" in e)
    assert error < order.index("selectbox:GPU"), order  # right under the paste box, above the hardware
    assert sum("not valid JSON" in e for e in order) == 1  # shown once


def test_a_generic_config_json_is_named_by_its_model():
    from ui.sidebar import upload_name

    assert upload_name("config.json") is None and upload_name("Qwen2-7B.json") == "Qwen2-7B"
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "intermediate_size": 8192,
        "vocab_size": 32000,
        "max_position_embeddings": 8192,
    }
    assert (
        app(sb_model=UPLOAD, sb_config_paste=json.dumps(cfg)).session_state["scenario"].model_spec.name
        == "LlamaForCausalLM"
    )
    named = app(sb_model=UPLOAD, sb_config_paste=json.dumps({**cfg, "_name_or_path": "acme/tiny-llama"}))
    assert named.session_state["scenario"].model_spec.name == "acme/tiny-llama"


@pytest.mark.parametrize("tp, gpus, expected", [(4, 1, 4), (4, 6, 8), (2, 8, 8), (8, 1020, 1024)])
def test_tp_raises_the_gpus_field(monkeypatch, tp, gpus, expected):
    """The TP selectbox's on_change: GPUs becomes a multiple of TP, at least TP (AppTest cannot drive a sidebar
    widget after the first run; tests/test_browser.py drives the real one)."""
    import ui.sidebar as sidebar

    state = {"sb_tp": tp, "sb_num_gpus": gpus}
    monkeypatch.setattr(sidebar.st, "session_state", state)
    sidebar._gpus_follow_tp()
    assert state["sb_num_gpus"] == expected


def test_fp8_on_ampere_is_explained():
    at = app(sb_gpu="A100-80GB", sb_weights="fp8")
    assert any("no FP8 tensor cores" in i.value and "Marlin" in i.value for i in at.info)
    assert not any("FP8 tensor cores" in i.value for i in app(sb_gpu="H100-SXM", sb_weights="fp8").info)


def test_streamlit_toolbar_has_no_deploy_button():
    import tomllib

    from conftest import ROOT

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["toolbarMode"] == "minimal"  # "minimal" hides Deploy and the developer options


def test_plain_verdict_and_the_nearest_fix_one_click_away():
    at = app(sb_model="meta-llama/Llama-3.1-70B", sb_gpu="A100-80GB")
    assert not at.exception
    verdict = next(e.value for e in at.error if e.value.startswith("**Does not fit:**"))
    assert "Nearest fixes" in verdict and "weights" in verdict  # the plan's reason, in one sentence
    shown = " ".join(m.value for m in at.markdown)
    assert "**precision:** AWQ INT4" in shown and "**TP:** TP 2" in shown and "**GPU:**" in shown
    at.button(key="fit_use_1").click().run()  # TP 2
    assert not at.exception
    # the rerun applies it in the sidebar: widgets and scenario (test_page_capacity checks the same for a queued one)
    assert (at.session_state["sb_gpu"], at.session_state["sb_tp"], at.session_state["sb_num_gpus"]) == (
        "A100-80GB",
        2,
        2,
    )
    loaded = at.session_state["scenario"]
    assert (loaded.gpu, loaded.deployment.tensor_parallel_size, loaded.deployment.num_gpus) == ("A100-80GB", 2, 2)
    assert loaded.model == "meta-llama/Llama-3.1-70B"
    assert any(s.value.startswith("**Fits.**") for s in at.success)


def test_a_fitting_scenario_says_so_plainly():
    at = app()
    assert any(s.value.startswith("**Fits.**") for s in at.success)


def test_page_offers_the_launch_commands_of_the_scenario():
    # the default scenario (vLLM, Llama-3.1-8B on one GPU) as `vllm serve`, with a download
    at = app()
    assert not at.exception
    code = [c.value for c in at.code if "vllm serve" in c.value]
    assert code and "--max-model-len 8192" in code[0] and "--tensor-parallel-size 1" in code[0]
    assert any(el.proto.label == "Download the launch commands" for el in at.get("download_button"))
