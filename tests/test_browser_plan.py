"""Real-browser test of the issue-16 journey: 70B on 4×A100, 50 req/s chat, p95 TTFT ≤ 2 s.

Open the plan as a shared link on Capacity & cost, see replicas and $ on screen; the sizing report CSV holds the
same plan (target, SLO, replicas, $/h, whether the SLO holds, the p95 TTFT at the operating point); the share link
reopens the same page with the same answer in a new session; TP 4 raises the GPUs field; no Deploy button.
"""

from __future__ import annotations

import csv
import io
from urllib.parse import urlencode, urlsplit

import pytest
from browser_fixtures import metric_values, open_session, screenshot, sidebar_select, wait_for_value, wait_idle

from planner.core.scenario import Scenario
from planner.core.scenario_codec import to_query
from planner.core.specs import Deployment
from planner.core.workload import SLO, TrafficSpec

pytestmark = pytest.mark.browser

SIDEBAR = '[data-testid="stSidebar"]'
JOURNEY = Scenario(
    model="meta-llama/Llama-3.1-70B",
    gpu="A100-80GB",
    deployment=Deployment(num_gpus=4, tensor_parallel_size=4, max_model_len=8192),
    traffic=TrafficSpec(profile="chat"),
    target_rate=50.0,
    slo=SLO(ttft_p95_s=2.0, tpot_p95_s=0.1),
)


def _csv_rows(page) -> dict[tuple[str, str], dict]:
    button = page.locator(SIDEBAR).get_by_role("button", name="Sizing report (CSV)", exact=True)
    with page.expect_download(timeout=120_000) as info:
        button.click()
    text = info.value.path().read_text()
    return {(r["section"], r["name"]): r for r in csv.DictReader(io.StringIO(text))}


def test_the_plan_on_screen_in_the_csv_and_in_the_link(browser, app_url):
    # (the pages live in app_pages/, not pages/: Streamlit would run a first session opened on a page URL as a
    # pages/-directory app, without the sidebar, until app.py's st.navigation had run once)
    pg = open_session(browser, f"{app_url}/capacity?{urlencode(to_query(JOURNEY))}")
    try:
        pg.get_by_text("Capacity per replica (req/s)").wait_for(timeout=120_000)
        wait_idle(pg)
        shown = metric_values(pg)
        replicas, usd_h = shown["Replicas"], shown["$ per hour"]
        ttft_ms = shown["p95 TTFT at the operating point (ms)"]
        screenshot(pg, "plan_capacity_page")

        rows = _csv_rows(pg)
        assert rows[("plan", "target_rate")]["value"] == "50" and rows[("plan", "slo_ttft_p95_s")]["value"] == "2"
        assert rows[("plan", "replicas")]["value"] == replicas
        assert f"${float(rows[('plan', 'usd_per_hour')]['value']):,.2f}" == usd_h
        op_ttft = float(rows[("latency at the operating point", "ttft_p95_s")]["value"])
        assert f"{op_ttft * 1e3:,.0f}" == ttft_ms and op_ttft <= 2.0  # continuous batching, not a pool-wide batch
        assert rows[("plan", "slo_holds")]["value"] == "True"
        assert rows[("plan", "usd_per_million_output_tokens")]["unit"] == "USD/M tokens"

        link = pg.url  # the app keeps the URL in step with the scenario and the page
        assert urlsplit(link).path.endswith("/capacity")
        box = pg.locator(f'{SIDEBAR} [data-testid="stExpander"]').filter(has_text="Share or save this scenario")
        box.locator("summary").click()
        copied = box.locator("code").first.text_content()
        assert urlsplit(copied).path.endswith("/capacity"), copied  # the copy-link box names the page too
        assert "rate=50" in copied and "ttft=2" in copied
        again = open_session(browser, link)
        try:
            again.get_by_text("Capacity per replica (req/s)").wait_for(timeout=120_000)
            wait_idle(again)
            reopened = metric_values(again)
            assert (reopened["Replicas"], reopened["$ per hour"]) == (replicas, usd_h)
            screenshot(again, "plan_link_reopened")
        finally:
            again.context.close()
    finally:
        pg.context.close()


def test_tp_raises_the_gpus_field(page):
    gpus = page.locator(SIDEBAR).get_by_label("GPUs", exact=True)
    wait_for_value(page, gpus, "1", "GPUs before")
    sidebar_select(page, "Tensor parallel", "4", "4")
    wait_for_value(page, gpus, "4", "GPUs after TP 4")


def test_no_deploy_button(page):
    assert not page.get_by_role("button", name="Deploy").count()
    assert not page.locator('[data-testid="stAppDeployButton"]').count()


def test_use_this_fix_lands_in_the_sidebar(browser, app_url):
    too_big = Scenario(model="meta-llama/Llama-3.1-70B", gpu="A100-80GB", deployment=Deployment(max_model_len=8192))
    pg = open_session(browser, f"{app_url}/?{urlencode(to_query(too_big))}")
    try:
        pg.get_by_text("Does not fit:").first.wait_for()
        row = pg.locator('[data-testid="stHorizontalBlock"]').filter(has_text="TP 2 (2 GPUs per replica)").last
        row.get_by_role("button", name="Use this").click()
        tp = pg.locator(f'{SIDEBAR} input[role="combobox"][aria-label="Tensor parallel"]')
        wait_for_value(pg, tp, "2", "Tensor parallel after Use this")
        wait_for_value(pg, pg.locator(SIDEBAR).get_by_label("GPUs", exact=True), "2", "GPUs after Use this")
        pg.get_by_text("Fits.").first.wait_for()
        assert "tp=2" in pg.url and "gpus=2" in pg.url
        screenshot(pg, "plan_fit_fix_used")
    finally:
        pg.context.close()


def test_use_this_deployment_scrolls_back_to_the_plan(browser, app_url):
    # issue 27 #4: after "Use this deployment" (under the ranking) the view stayed at the autoscaler, below the plan
    # that changed; it now scrolls back to the plan's heading
    small = Scenario(traffic=TrafficSpec(profile="chat", num_requests=200), target_rate=5.0)
    context = browser.new_context(viewport={"width": 1500, "height": 1400})
    pg = context.new_page()
    pg.set_default_timeout(120_000)  # the plan's search, then the ranking, on a machine other work shares
    pg.goto(f"{app_url}/capacity?{urlencode(to_query(small))}")
    try:
        pg.wait_for_selector('[data-testid="stMetricValue"]')
        wait_idle(pg)
        pg.get_by_role("button", name="Rank all deployments").click()
        use = pg.get_by_role("button", name="Use this deployment")
        use.wait_for(timeout=240_000)
        wait_idle(pg)
        use.scroll_into_view_if_needed()
        top = "() => document.getElementById('the-plan').getBoundingClientRect().top"
        assert pg.evaluate(top) < 0  # the plan is above the view
        use.click()
        pg.get_by_text("Loaded ").first.wait_for()  # the toast
        wait_idle(pg)
        pg.wait_for_function(f"() => Math.abs(({top})()) < 150", timeout=10_000)  # the heading at the top
        screenshot(pg, "plan_after_use_this_deployment")
    finally:
        pg.context.close()
