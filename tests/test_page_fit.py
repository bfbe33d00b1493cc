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
                # max_model_len: the model's context window (131,072), vLLM's and the CLI's default (issue 27 #19);
                # batch limits: vLLM's default for the GPU
                deployment=Deployment(),
            )
        )
    )
    assert m["Textbook: requests fit"] == f"{expected.textbook_max_requests:,}"
    assert m["vLLM: max concurrency"] == f"{expected.max_concurrency:,.2f}x"
    assert at.session_state["scenario"].deployment.max_model_len is None and expected.max_model_len == 131_072
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


def test_uploaders_say_the_limit_their_reader_enforces():
    # issue 27 #15: the config.json uploader said Streamlit's "200MB per file" while 1,000,000 bytes are read
    import tomllib

    from conftest import ROOT

    from planner.cli.app_cmd import SERVER_DEFAULTS

    at = app(sb_model=UPLOAD, sb_open_share=True)  # the share box draws its uploader while open (ui/lazy_section.py)
    assert not at.exception
    limits = {u.proto.label: u.proto.max_upload_size_mb for u in at.get("file_uploader")}
    assert limits["config.json"] == 1 and limits["Load a saved scenario JSON"] == 1
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())  # the largest: a trace
    assert config["server"]["maxUploadSize"] == int(SERVER_DEFAULTS["--server.maxUploadSize"]) == 200


def test_plain_verdict_and_the_nearest_fix_one_click_away():
    at = app(sb_model="meta-llama/Llama-3.1-70B", sb_gpu="A100-80GB")
    assert not at.exception
    verdict = next(e.value for e in at.error if e.value.startswith("**Does not fit:**"))
    assert "Nearest fixes" in verdict and "weights" in verdict  # the plan's reason, in one sentence
    shown = " ".join(m.value for m in at.markdown)
    # at the model's 131,072-token window (vLLM's default max_model_len) AWQ on one A100 and TP 2 cannot hold one
    # request of that length: TP 4 is the nearest (as `memory --suggest`); at 8,192 it was AWQ INT4, then TP 2
    assert "**TP:** TP 4" in shown and "**GPU:**" in shown and "AWQ" not in shown
    at.button(key="fit_use_0").click().run()  # TP 4
    assert not at.exception
    # the rerun applies it in the sidebar: widgets and scenario (test_page_capacity checks the same for a queued one)
    assert (at.session_state["sb_gpu"], at.session_state["sb_tp"], at.session_state["sb_num_gpus"]) == (
        "A100-80GB",
        4,
        4,
    )
    loaded = at.session_state["scenario"]
    assert (loaded.gpu, loaded.deployment.tensor_parallel_size, loaded.deployment.num_gpus) == ("A100-80GB", 4, 4)
    assert loaded.model == "meta-llama/Llama-3.1-70B"
    assert any(s.value.startswith("**Fits.**") for s in at.success)


def test_a_fitting_scenario_says_so_plainly():
    at = app()
    assert any(s.value.startswith("**Fits.**") for s in at.success)


def test_the_max_model_len_fix_is_the_largest_that_fits():
    # 70B BF16 on 2 × A100-80GB at max_model_len 32,768: 16,384 fits one request, 20,480 does not; 2,048 (the
    # request rounded up) also fits but throws away context the deployment can hold
    at = app(
        sb_model="meta-llama/Llama-3.1-70B",
        sb_gpu="A100-80GB",
        sb_tp=2,
        sb_num_gpus=2,
        sb_set_maxlen=True,
        sb_max_len=32768,
    )
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown)
    assert "**max_model_len:** max_model_len 16,384, the largest that fits" in shown, shown


def test_a_checkpoint_published_in_fp8_loads_in_fp8():
    at = app()
    at.selectbox(key="sb_model").set_value("deepseek-ai/DeepSeek-V3").run()
    assert not at.exception
    assert at.session_state["sb_weights"] == "fp8" == at.session_state["scenario"].deployment.weights  # was bf16
    at.selectbox(key="sb_model").set_value("meta-llama/Llama-3.1-8B").run()
    assert at.session_state["sb_weights"] == "fp8"  # a BF16 checkpoint keeps the user's choice


def test_fp8_on_ampere_is_labelled_weight_only_everywhere():
    at = app(
        sb_model="meta-llama/Llama-3.1-70B",
        sb_gpu="A100-80GB",
        sb_tp=2,
        sb_num_gpus=2,
        sb_set_maxlen=True,
        sb_max_len=32768,
    )
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown)
    assert "**precision:** FP8 (weight-only, Marlin) weights" in shown and "W8A8, E4M3" not in shown
    assert resolve(Scenario(gpu="A100-80GB", deployment=Deployment(weights="fp8"))).weights.label == (
        "FP8 (weight-only, Marlin)"
    )
    assert resolve(Scenario(gpu="H100-SXM", deployment=Deployment(weights="fp8"))).weights.label == "FP8 (W8A8, E4M3)"


def test_one_prefix_caching_switch_on_by_default_and_in_the_link():
    from planner.core.scenario_codec import to_query

    at = app()
    s = at.session_state["scenario"]
    assert at.session_state["sb_prefix"] is True and s.deployment.enable_prefix_caching is True  # box was unticked
    assert to_query(s)["pfx"] in ("1", "true")
    off = app(sb_prefix=False).session_state["scenario"]
    assert off.traffic.prefix_caching is False and off.deployment.enable_prefix_caching is False
    assert to_query(off)["pfx"] in ("0", "false")  # unticking changed nothing in the link before


def test_requests_fit_agrees_with_a_verdict_that_vllm_refuses_to_start():
    at = app(
        sb_model="meta-llama/Llama-3.1-70B",
        sb_gpu="A100-80GB",
        sb_tp=2,
        sb_num_gpus=2,
        sb_set_maxlen=True,
        sb_max_len=32768,
    )
    assert any(e.value.startswith("**Does not fit:**") for e in at.error)
    fit = next(m for m in at.metric if m.label == "vLLM: requests fit")
    assert fit.value == "0" and "would not start" in fit.help  # was 11 beside "refuses to start"


def test_a_json_error_reads_once_at_its_line():
    at = app(sb_model=UPLOAD, sb_config_paste='{\n"hidden_size": 4096,\n"model_type": "llama')
    errors = " ".join(e.value for e in at.error)
    assert "Unterminated string starting at line 3" in errors and "at at" not in errors


def test_a_rejected_upload_error_goes_when_a_config_is_pasted():
    cfg = {
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "intermediate_size": 8192,
        "vocab_size": 32000,
        "max_position_embeddings": 8192,
    }
    at = app(
        sb_model=UPLOAD,
        sb_upload_rejected="config.json: file is 2,000,000 bytes",
        sb_config_paste=json.dumps(cfg),
    )
    assert not at.exception
    assert not [e.value for e in at.error if "2,000,000 bytes" in e.value]  # the old error stayed
    assert at.session_state["scenario"].model_spec.num_layers == 16


def test_page_offers_the_launch_commands_of_the_scenario():
    # the default scenario (vLLM, Llama-3.1-8B on one GPU) as `vllm serve`, with a download
    at = app()
    assert not at.exception
    code = [c.value for c in at.code if "vllm serve" in c.value]
    # max_model_len: the model's window, written out as the CLI's `launch` does (issue 27 #19; it was 8192)
    assert code and "--max-model-len 131072" in code[0] and "--tensor-parallel-size 1" in code[0]
    assert any(el.proto.label == "Download the launch commands" for el in at.get("download_button"))


def test_the_app_and_the_cli_report_the_same_memory_for_the_same_scenario(capsys):
    # issue 27 #19: the app's report said 345 textbook requests and `servingplan report` 3 (max_model_len 8,192 in
    # the app, 131,072 in the CLI; context = the chat profile's mean request in the app, max_model_len in the CLI)
    import csv
    import io

    from planner.cli import main
    from planner.report import report_rows, to_csv

    def values(text: str) -> dict[str, str]:
        return {row["name"]: row["value"] for row in csv.DictReader(io.StringIO(text)) if row["name"] in wanted}

    at = app()
    assert not at.exception
    wanted = {
        "textbook_max_requests",
        "max_model_len (resolved)",
        "context_tokens",
        "max_concurrency",
        "kv_cache_tokens",
    }
    ours = values(to_csv(report_rows(at.session_state["scenario"])))
    assert main(["report"]) == 0
    assert ours == values(capsys.readouterr().out) and len(ours) == len(wanted)
    assert ours["max_model_len (resolved)"] == "131072" and ours["textbook_max_requests"] == "345"


def test_the_tp_table_note_column_is_as_wide_as_its_longest_note():
    # issue 27 #20: "Does not fit: the KV pool holds …" (151 characters) was cut at Streamlit's column width
    at = app(sb_model="meta-llama/Llama-3.1-70B", sb_gpu="A100-80GB")
    assert not at.exception
    table = next(d for d in at.dataframe if "note" in d.value.columns)
    longest = max(len(n) for n in table.value["note"])
    assert longest > 100
    assert json.loads(table.proto.columns)["note"]["width"] >= 6.5 * longest


def test_the_page_names_the_scenarios_engine_not_vllm():
    # under SGLang (set by a link or a saved scenario: sb_engine) the pool, the concurrency and the chart's middle
    # curve are SGLang's (mem_fraction_static's pool), and every label says so
    at = app(sb_engine="sglang")
    assert not at.exception
    m = metrics(at)
    plan = plan_memory(resolve(at.session_state["scenario"]))
    assert m["SGLang: max concurrency"] == f"{plan.max_concurrency:,.2f}x"
    assert not any(label.startswith("vLLM") for label in m)
    assert "in SGLang's KV pool" in at.success[0].value
    names = [t["name"] for c in at.get("plotly_chart") for t in json.loads(c.proto.spec)["data"]]
    assert "SGLang KV pool (blocks)" in names and not any(n.startswith("vLLM") for n in names)


def test_dp_replica_holds_the_sum_over_its_ranks():
    # issue 56 #1: DeepSeek-V3 FP8 on 8 × H200 as TP 1 × DP 8 + EP said "318 requests ... per replica", one DP
    # rank's pool; the replica holds 8 × 318 = 2,544, more than TP 8's 356 (plan_memory's own per-rank figures)
    dsv3 = dict(sb_model="deepseek-ai/DeepSeek-V3", sb_gpu="H200", sb_weights="fp8", sb_num_gpus=8)
    at = app(sb_tp=1, sb_dp=8, sb_ep=True, **dsv3)
    verdict = next(s.value for s in at.success)
    assert "2,544 requests of 1,410 tokens fit at once per replica: 8 DP ranks × 318 per rank" in verdict, verdict
    assert metrics(at)["vLLM: requests fit"] == "2,544"
    tp8 = app(sb_tp=8, **dsv3)
    assert "356 requests of 1,410 tokens fit at once per replica in" in next(s.value for s in tp8.success)


def test_weights_that_cannot_fit_get_advice_that_can_work():
    # issue 56 #5: DeepSeek-V3 FP8 (673 GB of weights) on one H100 with no single fix said "shorten the requests or
    # lower max_model_len"; ceil(672.9 GB / 76.5 GB budget per GPU) = 9 GPUs at least
    at = app(sb_model="deepseek-ai/DeepSeek-V3", sb_gpu="H100-SXM", sb_weights="fp8")
    verdict = next(e.value for e in at.error if e.value.startswith("**Does not fit:**"))
    assert "max_model_len" not in verdict and "shorten" not in verdict, verdict
    assert "at least 9 GPUs" in verdict and "lower-precision weights" in verdict
