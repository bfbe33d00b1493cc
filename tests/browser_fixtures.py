"""Real-browser fixtures: a `streamlit run` server on a free port and Debian's chromium driven by Playwright.

Import the fixtures into a test module by name (`from browser_fixtures import app_url, browser, page`).
Chromium missing: the tests skip, unless SERVINGPLAN_REQUIRE_BROWSER=1 (CI), then they fail.

Race (docs/testing.md): after an input changes, wait for the *new value* to appear, then for the script state
`notRunning`; the state still reads `notRunning` for ~0.1 s after the key press.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from planner.cli.app_cmd import local_server_options, streamlit_command

ROOT = Path(__file__).resolve().parents[1]
APP_DIR = Path(os.environ.get("SERVINGPLAN_APP_DIR", ROOT))  # another checkout, to try the tests against it
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
TIMEOUT_MS = 30_000


def _unavailable(reason: str) -> None:
    if os.environ.get("SERVINGPLAN_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required (SERVINGPLAN_REQUIRE_BROWSER=1) but {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(app_dir: Path, log_path: Path, port: int | None = None) -> tuple[subprocess.Popen, str]:
    """`streamlit run app.py` headless on a free port; returns (process, base URL) once /_stcore/health is 200."""
    port = port or free_port()
    cmd = streamlit_command("app.py", local_server_options(port))
    with open(log_path, "w") as log:  # the child keeps its own handle
        proc = subprocess.Popen(cmd, cwd=app_dir, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as resp:
                if resp.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"streamlit did not become healthy in 30 s: {log_path.read_text()[-2000:]}")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def server_log(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("streamlit") / "server.log"


@pytest.fixture(scope="session")
def app_url(server_log):
    """Base URL of a live `streamlit run app.py` (started once per session)."""
    proc, url = start_server(APP_DIR, server_log)
    yield url
    stop_server(proc)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        _unavailable(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright (Python) is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_session(browser, url: str):
    """A fresh browser context (a new Streamlit session) on `url`, its first run finished."""
    context = browser.new_context(viewport={"width": 1500, "height": 1400}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    pg.goto(url)
    pg.wait_for_selector('[data-testid="stSidebarNav"] a')
    pg.wait_for_selector('[data-testid="stMetricValue"]')
    wait_idle(pg)
    return pg


@pytest.fixture
def page(browser, app_url):
    """A new session on the app's default page."""
    pg = open_session(browser, app_url)
    yield pg
    pg.context.close()


# --- helpers ----------------------------------------------------------------------------------------------------


def wait_idle(page) -> None:
    """The script has finished: notRunning twice around a pause (the state reads notRunning before a rerun starts)."""
    page.wait_for_selector(IDLE)
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE)


def sidebar_select(page, label: str, text: str, expect: str) -> None:
    """Pick an option of a sidebar selectbox the way a user does (click, type, Enter), then wait for the new value
    to stick through the rerun it triggers."""
    box = page.locator(f'[data-testid="stSidebar"] input[role="combobox"][aria-label="{label}"]')
    before = box.input_value()
    box.click()
    page.keyboard.type(text)
    page.get_by_role("option", name=expect, exact=True).wait_for()
    page.keyboard.press("Enter")
    wait_for_value(page, box, expect, f"sidebar selectbox {label!r} (was {before!r})")


def wait_for_value(page, locator, expect: str, what: str, timeout_ms: int = 10_000) -> None:
    """Wait until `locator`'s input value is `expect` and stays so once the rerun has finished."""
    deadline = time.monotonic() + timeout_ms / 1000
    value = None
    while time.monotonic() < deadline:
        value = locator.input_value() if locator.count() == 1 else None
        if value == expect:
            wait_idle(page)
            value = locator.input_value() if locator.count() == 1 else None
            if value == expect:
                return
        page.wait_for_timeout(100)
    raise AssertionError(f"{what}: expected {expect!r} after the rerun, the page shows {value!r}")


def metric_values(page, scope: str = "") -> dict[str, str]:
    """Metric label -> displayed value (labels repeated on a page get ' #2', ' #3' ...)."""
    out: dict[str, str] = {}
    for m in page.locator(f'{scope} [data-testid="stMetric"]'.strip()).all():
        label = m.locator('[data-testid="stMetricLabel"]').inner_text().strip()
        value = m.locator('[data-testid="stMetricValue"]').inner_text().strip()
        key, n = label, 1
        while key in out:
            n += 1
            key = f"{label} #{n}"
        out[key] = value
    return out


def wait_for_metric_change(page, label: str, old: str, timeout_ms: int = 15_000) -> str:
    """Wait until the first metric labelled `label` shows something other than `old`; return the new value."""
    js = """([label, old]) => {
        for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
            const l = m.querySelector('[data-testid="stMetricLabel"]');
            if (l && l.innerText.trim() === label) {
                const v = m.querySelector('[data-testid="stMetricValue"]').innerText.trim();
                return v !== old ? v : false;
            }
        }
        return false;
    }"""
    try:
        page.wait_for_function(js, arg=[label, old], timeout=timeout_ms)
    except Exception:
        raise AssertionError(f"metric {label!r} still shows {old!r} after {timeout_ms} ms") from None
    wait_idle(page)
    return metric_values(page)[label]


def nav_titles(page) -> list[str]:
    """The titles of the pages app.py registers, read from the navigation links (so new pages are covered)."""
    more = page.get_by_role("button", name=re.compile(r"View \d+ more"))
    if more.count():
        more.first.click()
    titles = []
    for link in page.locator('[data-testid="stSidebarNav"] a').all():
        label = link.locator("span[label]")
        title = label.first.get_attribute("label") if label.count() else link.inner_text().splitlines()[-1]
        titles.append(title.strip())
    return titles


def goto_page(page, title: str) -> None:
    """Click the navigation link of `title` and wait for that page's run to finish."""
    link = page.locator('[data-testid="stSidebarNav"] a').filter(has=page.locator(f'span[label="{title}"]')).first
    path = urlsplit(link.get_attribute("href")).path
    link.click()
    page.wait_for_url(lambda url: urlsplit(url).path == path)  # the query string carries the scenario
    page.wait_for_timeout(300)  # the script state flips to running only after the page request is sent
    wait_idle(page)


def plotly_data(page, index: int = 0) -> list[dict]:
    """The traces of the index-th plotly chart on the page as plotly.js drew them (typed arrays decoded)."""
    return page.evaluate(
        """i => {
        const plots = document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot');
        if (!plots[i] || !plots[i]._fullData) return null;
        const arr = a => (a && a.length !== undefined && typeof a !== 'string') ? Array.from(a) : a;
        return plots[i]._fullData.map(t => ({name: t.name, x: arr(t.x), y: arr(t.y), base: arr(t.base)}));
    }""",
        index,
    )


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_") or "page"


def screenshot(page, name: str, max_height: int = 12_000) -> Path:
    """Whole-page PNG in artifacts/screenshots/. Streamlit scrolls inside stMain, so the viewport is stretched to
    the main area's height for the shot (then restored)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    height = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]');
        if (!m) return 0; m.scrollTo(0, 0); return m.scrollHeight; }""")
    if height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(height + 50, max_height)})
        page.wait_for_timeout(500)  # plotly relayouts on resize
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    return path
