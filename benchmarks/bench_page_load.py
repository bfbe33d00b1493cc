"""Each page of the app loaded by a new user in headless Chromium: time until the page is idle, bytes over the wire
(HTTP bodies + websocket frames, i.e. the JavaScript bundles plus what the script sends), and the browser's own CPU
time (scripts, layout, WebGL).

    python -m benchmarks.bench_page_load [--pages latency,traffic] [--port 8765]

Starts `streamlit run app.py` headless on 127.0.0.1 with the app's server settings, then for each page opens a fresh
browser context (empty cache, a new session, as a first visit) on /<page>, waits until the script has finished and
the page has settled (the script state notRunning twice around 0.5 s and every Plotly chart drawn), and reads
Chrome's counters (CDP Network and Performance domains).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import time
import urllib.request
from pathlib import Path

from planner.cli.app_cmd import local_server_options, streamlit_command

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def page_slugs() -> list[str]:
    return [Path(p).stem for p in re.findall(r"""st\.Page\(\s*["']([^"']+\.py)["']""", (ROOT / "app.py").read_text())]


def start(port: int) -> subprocess.Popen:
    cmd = streamlit_command("app.py", local_server_options(port))
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("streamlit did not start")


def load(browser, url: str) -> dict:
    context = browser.new_context(viewport={"width": 1500, "height": 1400})
    page = context.new_page()
    page.set_default_timeout(180_000)
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Performance.enable")
    sizes = {"http": 0, "ws": 0}
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__("http", sizes["http"] + e["encodedDataLength"]))
    cdp.on(
        "Network.webSocketFrameReceived",
        lambda e: sizes.__setitem__("ws", sizes["ws"] + len(e["response"]["payloadData"])),
    )
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector('[data-testid="stSidebarNav"] a')
    page.wait_for_selector("h1")
    while True:  # settled: idle before and after a pause, and every chart drawn
        page.wait_for_selector(IDLE)
        page.wait_for_timeout(500)
        charts = page.locator('[data-testid="stPlotlyChart"]').count()
        drawn = page.locator('[data-testid="stPlotlyChart"] .main-svg').count()
        if page.locator(IDLE).count() and drawn >= charts:
            break
    idle_s = time.perf_counter() - t0 - 0.5  # the last pause only confirms
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    out = {
        "idle_s": idle_s,
        "http_bytes": sizes["http"],
        "ws_bytes": sizes["ws"],
        "browser_cpu_s": metrics.get("TaskDuration", 0.0),
        "charts": page.locator('[data-testid="stPlotlyChart"]').count(),
    }
    context.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", default=None, help="comma-separated page slugs (default: every page)")
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    proc = start(args.port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            load(browser, f"http://127.0.0.1:{args.port}/")  # warm the server (imports, caches), as after a start
            print(
                f"{'page':<14} {'idle (s)':>9} {'HTTP (MB)':>10} {'websocket (MB)':>15} {'browser CPU (s)':>16} charts"
            )
            for slug in args.pages.split(",") if args.pages else page_slugs():
                r = load(browser, f"http://127.0.0.1:{args.port}/{slug}")
                print(
                    f"{slug:<14} {r['idle_s']:>9.1f} {r['http_bytes'] / 1e6:>10.2f} {r['ws_bytes'] / 1e6:>15.2f} "
                    f"{r['browser_cpu_s']:>16.1f} {r['charts']:>6}"
                )
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
