"""Real-browser end-to-end tests (Playwright + Debian chromium against `streamlit run app.py`).

Flows: pick a model and a GPU in the sidebar and see "Does it fit?" change; move a Batching slider and see its
chart change; upload a bad config.json and see the error name the field while the other inputs stay; a
screenshot of every page app.py registers (artifacts/screenshots/), with no exception on any of them.
"""

from __future__ import annotations

import json

import pytest
from browser_fixtures import (
    ROOT,
    goto_page,
    metric_values,
    nav_titles,
    plotly_data,
    screenshot,
    sidebar_select,
    slug,
    wait_for_metric_change,
    wait_for_value,
    wait_idle,
)

pytestmark = pytest.mark.browser

SIDEBAR_ERROR = '[data-testid="stSidebar"] [data-testid="stAlertContentError"]'


def test_pick_model_and_gpu_updates_fit_metrics(page):
    """Runs first, so it is also the first session after the server starts (a case that has lost the first
    sidebar change: entrypoint widgets drawn before st.navigation() get another widget id on the first run)."""
    before = metric_values(page)
    assert before["Parameters"] == "8.03 B"  # Llama-3.1-8B, the default
    sidebar_select(page, "GPU", "A100-40", "A100-40GB (40 GB)")
    # 40 GB instead of 80 GB: fewer requests fit, in the textbook sum and in vLLM's pool
    fit = wait_for_metric_change(page, "Textbook: requests fit", before["Textbook: requests fit"])
    assert int(fit.replace(",", "")) < int(before["Textbook: requests fit"].replace(",", ""))
    assert metric_values(page)["vLLM: max concurrency"] != before["vLLM: max concurrency"]

    sidebar_select(page, "Model", "Llama-2-7b-hf", "Llama · meta-llama/Llama-2-7b-hf")  # presets grouped by family
    assert wait_for_metric_change(page, "Parameters", "8.03 B") == "6.74 B"
    after = metric_values(page)
    assert after["KV per token"] == "524,288 B"  # primer §3: 2 × 32 × 32 × 128 × 2
    gpu = page.locator('[data-testid="stSidebar"] input[aria-label="GPU"]')
    assert gpu.input_value() == "A100-40GB (40 GB)"  # changing the model kept the GPU
    screenshot(page, "flow_model_and_gpu")


def test_batching_slider_updates_chart(page):
    goto_page(page, "Batching")
    before = metric_values(page)
    assert before["Done at step"] == "13" and before["Done at step #2"] == "9"  # primer §6, 3 slots
    gantt = plotly_data(page, 0)
    assert gantt, "the Gantt chart did not render"
    slider = page.get_by_role("slider", name="Slots (requests running at once)")
    slider.focus()
    page.keyboard.press("ArrowRight")  # 3 -> 4 slots
    from playwright.sync_api import expect  # here, so a missing playwright skips via the fixture

    thumb = (
        page.locator('[data-testid="stSlider"]')
        .filter(has_text="Slots (requests running at once)")
        .locator('[data-testid="stSliderThumbValue"]')
    )
    expect(thumb).to_have_text("4")
    # 4 slots: static runs A-D then E, F and still ends at 13, so busy = 24 / (4 × 13); continuous ends at 8
    assert wait_for_metric_change(page, "GPU busy", before["GPU busy"]) == "46.2%"
    assert metric_values(page)["Done at step #2"] == "8"
    after = plotly_data(page, 0)
    assert after != gantt, "the Gantt chart did not change with the slots"
    slots_used = {y for trace in after for y in (trace["y"] or [])}
    assert slots_used == {0, 1, 2, 3}, slots_used  # a fourth slot row appears
    screenshot(page, "flow_batching_slots_4")


BAD_CONFIGS = [
    # (file content, text the error must contain)
    (
        json.dumps(
            {
                "hidden_size": 4096,
                "num_hidden_layers": -3,
                "num_attention_heads": 32,
                "vocab_size": 32000,
                "intermediate_size": 11008,
            }
        ),
        "num_hidden_layers",
    ),
    (b'{"hidden_size": 4096, "num_hidden_la', "not valid JSON"),
]


def _upload(page, name: str, content: str | bytes) -> None:
    uploader = page.locator('[data-testid="stSidebar"] [data-testid="stFileUploader"]').filter(
        has=page.get_by_text("config.json", exact=True)
    )
    data = content.encode() if isinstance(content, str) else content
    uploader.locator('input[type="file"]').set_input_files(
        files=[{"name": name, "mimeType": "application/json", "buffer": data}]
    )


def test_bad_config_upload_names_field_and_keeps_other_inputs(page):
    sidebar_select(page, "GPU", "A100-80", "A100-80GB (80 GB)")
    sidebar_select(page, "Model", "Upload or paste", "Upload or paste config.json")
    valid = metric_values(page)
    for content, expected in BAD_CONFIGS:
        _upload(page, "config.json", content)
        error = page.locator(SIDEBAR_ERROR).filter(has_text=expected)
        error.first.wait_for()
        wait_idle(page)
        assert error.first.inner_text().startswith("config.json"), error.first.inner_text()
        # the user's other inputs stay, and the page keeps the last valid scenario
        wait_for_value(
            page,
            page.locator('[data-testid="stSidebar"] input[aria-label="GPU"]'),
            "A100-80GB (80 GB)",
            "GPU after a bad upload",
        )
        wait_for_value(
            page,
            page.locator('[data-testid="stSidebar"] input[aria-label="Model"]'),
            "Upload or paste config.json",
            "Model after a bad upload",
        )
        assert metric_values(page)["Parameters"] == valid["Parameters"]
        assert not page.locator('[data-testid="stException"]').count()
    screenshot(page, "flow_bad_config_upload")

    # fixing the file clears the error and the model is used
    good = (ROOT / "data" / "models" / "meta-llama--Llama-2-7b-hf.json").read_bytes()
    _upload(page, "config.json", good)
    assert wait_for_metric_change(page, "Parameters", valid["Parameters"]) == "6.74 B"
    assert not page.locator(SIDEBAR_ERROR).count()
    assert page.locator('[data-testid="stSidebar"] input[aria-label="GPU"]').input_value() == "A100-80GB (80 GB)"


def test_every_page_renders_and_is_screenshotted(page):
    titles = nav_titles(page)
    assert "Does it fit?" in titles and "Batching" in titles, titles
    failures = []
    for title in titles:
        goto_page(page, title)
        path = screenshot(page, f"page_{slug(title)}")
        assert path.stat().st_size > 10_000, f"{path} looks empty"
        exceptions = page.locator('[data-testid="stException"]')
        if exceptions.count():
            failures.append(f"{title}: {exceptions.first.inner_text()[:500]}")
    assert not failures, "pages raised:\n" + "\n".join(failures)


def test_server_logged_no_traceback(page, server_log):
    """Runs last: nothing the flows above did made the server log a traceback."""
    text = server_log.read_text()
    assert "Traceback" not in text, text[text.index("Traceback") :][:3000]
