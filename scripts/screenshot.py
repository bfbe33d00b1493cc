"""Screenshot app pages in headless Debian chromium (Playwright), for looking at what a user sees.

    python -m scripts.screenshot [--url http://127.0.0.1:8501] [--out artifacts/screenshots] [PAGE_TITLE ...]

Waits for the script to finish running on each page before the shot; prints the files it wrote.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

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


def wait_idle(page, timeout_ms: int = 30000) -> None:
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms)
    page.wait_for_timeout(600)  # the state reads notRunning briefly before a rerun starts
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms)


def shoot(url: str, out: Path, titles: list[str], height: int = 2400) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": height})
        page.goto(url)
        page.wait_for_selector('[data-testid="stSidebarNav"]', timeout=30000)
        wait_idle(page)
        nav = page.locator('[data-testid="stSidebarNav"] a')
        links = titles or [a.inner_text().splitlines()[-1].strip() for a in nav.all()]
        for title in links:
            nav.filter(has_text=title).first.click()
            wait_idle(page)
            path = out / f"{title.lower().replace(' ', '_').replace('?', '').replace('&', 'and')}.png"
            page.screenshot(path=str(path), full_page=True)
            files.append(path)
        browser.close()
    return files


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8501")
    ap.add_argument("--out", default="artifacts/screenshots")
    ap.add_argument("titles", nargs="*")
    args = ap.parse_args()
    for f in shoot(args.url, Path(args.out), args.titles):
        print(f)
