"""Real-browser tests of sharing and saving a scenario (Playwright + Debian chromium against `streamlit run app.py`).

Flows: download the sidebar's sizing report CSV and check it against planner.report; open a shared link in a new
session and see the same scenario (selectboxes and "Does it fit?" metrics), then see the URL follow a change;
save the scenario JSON, load it into a fresh session and see it restored; upload an oversized config.json and see
the size limit named while the other inputs stay. Screenshots of these states go to artifacts/screenshots/.
"""

from __future__ import annotations

import csv
import io
import json
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from browser_fixtures import (
    metric_values,
    open_session,
    screenshot,
    sidebar_select,
    wait_for_metric_change,
    wait_for_value,
    wait_idle,
)

from planner.core.catalog import get_gpu, model_family, weight_precisions
from planner.core.hf_config import MAX_CONFIG_BYTES
from planner.core.scenario import Scenario, resolve
from planner.core.scenario_codec import from_json, from_query, to_query
from planner.core.specs import Deployment
from planner.core.workload import SLO, TrafficSpec
from planner.memory.plan import plan_memory
from planner.report import COLUMNS, report_rows, to_csv

pytestmark = pytest.mark.browser

SIDEBAR = '[data-testid="stSidebar"]'
SIDEBAR_ERROR = f'{SIDEBAR} [data-testid="stAlertContentError"]'
SHARE_EXPANDER = "Share or save this scenario"
PROMPT_LABEL = "Prompt tokens"  # the sidebar's Workload and SLO (custom profile)
# the shared link of test (b): every field off its default that the brief names; the request's 7,700 + 300 tokens
# are the context every page sizes (8,000)
SHARED = Scenario(
    model="mistralai/Mistral-7B-v0.1",
    gpu="L40S",
    deployment=Deployment(weights="fp8"),
    context_tokens=8000,
    traffic=TrafficSpec(profile="custom", prompt="fixed:7700", output="fixed:300"),
    target_rate=12.5,
    slo=SLO(ttft_p95_s=1.5, tpot_p95_s=0.08),
)


# --- fixtures ---------------------------------------------------------------------------------------------------
# browser, app_url, server_log and page are the session fixtures of tests/browser_fixtures.py (a conftest plugin):
# one server and one Chromium for every browser module.

# --- helpers ----------------------------------------------------------------------------------------------------


@pytest.fixture
def open_page(browser):
    """open_page(url) -> a page in its own new session; every context it made is closed afterwards."""
    contexts = []

    def _open_url(url: str):
        pg = open_session(browser, url)
        contexts.append(pg.context)
        return pg

    yield _open_url
    for context in contexts:
        context.close()


def _combobox(page, label: str):
    return page.locator(f'{SIDEBAR} input[role="combobox"][aria-label="{label}"]')


def _prompt_input(page):
    return page.locator(SIDEBAR).get_by_label(PROMPT_LABEL)


def _query(page) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(page.url).query))


def _wait_query(page, **expected: str) -> dict[str, str]:
    """Wait until the page URL's query string holds `expected` (the app rewrites it after each run)."""
    try:
        page.wait_for_function(
            """exp => { const q = new URLSearchParams(window.location.search);
            return Object.entries(exp).every(([k, v]) => q.get(k) === v); }""",
            arg=expected,
            timeout=10_000,
        )
    except Exception:
        raise AssertionError(f"URL query never showed {expected}: {page.url}") from None
    return _query(page)


def _gpu_label(gpu_id: str) -> str:
    return f"{gpu_id} ({get_gpu(gpu_id).memory_gb:g} GB)"


def _open_share_box(page):
    """Expand the sidebar's "Share or save this scenario" expander; return its container."""
    box = page.locator(f'{SIDEBAR} [data-testid="stExpander"]').filter(has_text=SHARE_EXPANDER)
    if not box.get_by_text("Save scenario JSON").is_visible():
        box.locator("summary").click()
    box.get_by_role("button", name="Save scenario JSON").wait_for()
    return box


def _download(page, button) -> bytes:
    with page.expect_download() as info:
        button.click()
    download = info.value
    return download.path().read_bytes()


def _fit_metrics(s: Scenario) -> dict[str, str]:
    """What app_pages/fit.py shows for scenario `s`, computed by the planner (same formatting)."""
    plan = plan_memory(resolve(s))
    return {
        "Parameters": f"{plan.params / 1e9:,.2f} B",
        "Weights per GPU (GB)": f"{plan.weight_bytes_per_gpu / 1e9:,.2f} GB",
        "KV per token": f"{plan.kv_bytes_per_token:,.0f} B",
        "KV per request (GB)": f"{plan.kv_bytes_per_request / 1e9:,.3f} GB",
        "Textbook: requests fit": f"{plan.textbook_max_requests:,}",
        "vLLM: requests fit": f"{plan.paged_max_requests:,}",
        "vLLM: max concurrency": f"{plan.max_concurrency:,.2f}x",
        "vLLM KV pool per GPU (GiB)": f"{plan.kv_pool_bytes_per_gpu / 2**30:,.2f} GiB",
    }


def _assert_fit_metrics(page, s: Scenario) -> None:
    shown = metric_values(page)
    expected = _fit_metrics(s)
    assert {k: shown.get(k) for k in expected} == expected


def _assert_sidebar_shows(page, s: Scenario) -> None:
    """The sidebar's inputs hold scenario `s` (model, GPU, weights, the request's prompt tokens, target rate)."""
    wait_for_value(page, _combobox(page, "Model"), f"{model_family(s.model)} · {s.model}", "Model")  # grouped by family
    wait_for_value(page, _combobox(page, "GPU"), _gpu_label(s.gpu), "GPU")
    wait_for_value(page, _combobox(page, "Weights"), weight_precisions()[s.deployment.weights].label, "Weights")
    wait_for_value(page, _prompt_input(page), s.traffic.prompt.removeprefix("fixed:"), PROMPT_LABEL)
    wait_for_value(
        page, page.locator(f'{SIDEBAR} input[aria-label="Target (req/s)"]'), f"{s.target_rate:.2f}", "Target"
    )


# --- (a) the sizing report CSV ------------------------------------------------------------------------------------


def test_report_csv_download_matches_planner(page):
    sidebar_select(page, "GPU", "A100-80", _gpu_label("A100-80GB"))
    query = _wait_query(page, gpu="A100-80GB")
    scenario = from_query(query)
    assert scenario.gpu == "A100-80GB"

    button = page.locator(SIDEBAR).get_by_role("button", name="Sizing report (CSV)", exact=True)
    text = _download(page, button).decode("utf-8")
    lines = text.splitlines()
    assert lines[0] == "section,name,value,unit,note" == ",".join(COLUMNS)
    got = {(r["section"], r["name"]): r for r in csv.DictReader(io.StringIO(text))}
    assert got[("input: model", "model")]["value"] == scenario.model == "meta-llama/Llama-3.1-8B"
    assert got[("input: GPU", "gpu")]["value"] == "A100-80GB"

    expected = {(r.section, r.name): r for r in report_rows(scenario)}
    for key in [
        ("memory (textbook)", "kv_bytes_per_token"),
        ("memory (textbook)", "kv_bytes_per_request"),
        ("memory (textbook)", "textbook_max_requests"),
        ("memory (textbook)", "textbook_max_requests_total"),
        ("memory (vLLM)", "num_gpu_blocks"),
        ("memory (vLLM)", "fits"),
    ]:
        value = expected[key].value  # the CSV writes floats to 10 significant digits
        assert got[key]["value"] == (f"{value:.10g}" if isinstance(value, float) else str(value)), (key, got[key])
        assert got[key]["unit"] == expected[key].unit
    assert float(got[("memory (textbook)", "kv_bytes_per_token")]["value"]) == 131_072  # 2 × 32 × 8 × 128 × 2
    assert text == to_csv(report_rows(scenario))  # and every other row, byte for byte
    screenshot(page, "share_report_csv_a100_80gb")


# --- (b) a shared link ----------------------------------------------------------------------------------------


def test_shared_link_restores_scenario_and_url_follows(open_page, app_url):
    pg = open_page(f"{app_url}/?{urlencode(to_query(SHARED))}")
    _assert_sidebar_shows(pg, SHARED)
    assert not pg.locator(SIDEBAR_ERROR).count(), pg.locator(SIDEBAR_ERROR).first.inner_text()
    _assert_fit_metrics(pg, SHARED)
    assert metric_values(pg)["Parameters"] == "7.24 B"  # Mistral-7B, not the default Llama-3.1-8B
    screenshot(pg, "share_link_opened")

    before = metric_values(pg)
    sidebar_select(pg, "GPU", "H100-S", _gpu_label("H100-SXM"))
    query = _wait_query(pg, gpu="H100-SXM")
    changed = SHARED.model_copy(update={"gpu": "H100-SXM"})
    # the rest of the shared scenario stays, in the widgets and in the link
    assert from_query(query) == changed, query
    assert (query["model"], query["w"], query["ctx"]) == ("mistralai/Mistral-7B-v0.1", "fp8", "8000")
    wait_for_metric_change(pg, "Textbook: requests fit", before["Textbook: requests fit"])
    _assert_fit_metrics(pg, changed)
    code = _open_share_box(pg).locator("code")  # its contents are drawn while open (ui/lazy_section.py)
    assert "gpu=H100-SXM" in code.first.text_content()  # the copyable link follows too


# --- (c) save and load a scenario JSON --------------------------------------------------------------------------


def test_saved_scenario_json_restores_in_fresh_session(page, open_page, app_url, tmp_path):
    sidebar_select(page, "GPU", "L40", _gpu_label("L40S"))
    sidebar_select(page, "Weights", "FP8", weight_precisions()["fp8"].label)
    _wait_query(page, gpu="L40S", w="fp8")
    box = _open_share_box(page)
    saved = _download(page, box.get_by_role("button", name="Save scenario JSON"))
    saved_path = tmp_path / "scenario.json"
    saved_path.write_bytes(saved)
    scenario = from_json(saved)
    assert json.loads(saved)["servingplan_scenario"] == 1
    assert (scenario.gpu, scenario.deployment.weights, scenario.model) == ("L40S", "fp8", "meta-llama/Llama-3.1-8B")

    fresh = open_page(app_url)  # a new session on the defaults
    wait_for_value(fresh, _combobox(fresh, "GPU"), _gpu_label("H100-SXM"), "GPU of a fresh session")
    default_fit = metric_values(fresh)
    box = _open_share_box(fresh)
    uploader = box.locator('[data-testid="stFileUploader"]').filter(
        has=fresh.get_by_text("Load a saved scenario JSON", exact=True)
    )
    uploader.locator('input[type="file"]').set_input_files(str(saved_path))
    wait_for_value(fresh, _combobox(fresh, "GPU"), _gpu_label("L40S"), "GPU after loading the saved JSON")
    wait_for_value(fresh, _combobox(fresh, "Weights"), weight_precisions()["fp8"].label, "Weights after loading")
    wait_for_metric_change(fresh, "Weights per GPU (GB)", default_fit["Weights per GPU (GB)"])
    assert not fresh.locator(SIDEBAR_ERROR).count(), fresh.locator(SIDEBAR_ERROR).first.inner_text()
    _assert_fit_metrics(fresh, scenario)
    assert _wait_query(fresh, gpu="L40S", w="fp8") == to_query(scenario)  # the link now shares the loaded scenario
    screenshot(fresh, "share_scenario_json_loaded")


# --- (d) an oversized config.json -----------------------------------------------------------------------------


def test_oversized_config_upload_names_limit_and_keeps_inputs(page, tmp_path):
    sidebar_select(page, "GPU", "L40", _gpu_label("L40S"))
    sidebar_select(page, "Model", "Upload or paste", "Upload or paste config.json")
    valid = metric_values(page)
    # valid JSON, a real config padded just past the cap
    real = {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
    }
    pad = MAX_CONFIG_BYTES + 10 - len(json.dumps({**real, "padding": ""}))
    big = tmp_path / "config.json"
    big.write_text(json.dumps({**real, "padding": "x" * pad}))
    size = big.stat().st_size
    assert MAX_CONFIG_BYTES < size <= MAX_CONFIG_BYTES + 10
    json.loads(big.read_text())

    uploader = page.locator(f'{SIDEBAR} [data-testid="stFileUploader"]').filter(
        has=page.get_by_text("config.json", exact=True)
    )
    # the uploader says the reader's limit (issue 27 #15: it said Streamlit's 200MB) and Streamlit itself refuses
    # a larger file in the browser (1MB = 10^6 bytes there): the file never reaches the app
    assert "1MB per file" in uploader.inner_text()
    uploader.locator('input[type="file"]').set_input_files(str(big))
    uploader.get_by_text("File must be 1.0MB or smaller").first.wait_for()
    wait_idle(page)
    wait_for_value(page, _combobox(page, "GPU"), _gpu_label("L40S"), "GPU after an oversized upload")
    wait_for_value(page, _combobox(page, "Model"), "Upload or paste config.json", "Model after an oversized upload")
    assert metric_values(page) == valid  # the last valid scenario stays in use
    assert _query(page)["gpu"] == "L40S"
    assert not page.locator('[data-testid="stException"]').count()
    screenshot(page, "share_oversized_config_upload")


def test_server_logged_no_traceback(page, server_log):
    """Runs last: nothing the flows above did made this module's server log a traceback."""
    text = server_log.read_text()
    assert "Traceback" not in text, text[text.index("Traceback") :][:3000]
