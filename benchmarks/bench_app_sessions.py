"""App sessions: N concurrent sessions on one `streamlit run app.py` server, each moving a slider over and over
(a load test of the web app itself, not the Traffic page's simulated replica).

Each session is a websocket client that speaks Streamlit's own protocol (the protobuf BackMsg/ForwardMsg the
browser sends), so 20 sessions cost the server what 20 browsers would without 20 browsers on the test machine.
Half the sessions stay on the default page ("Does it fit?"), open the sidebar's "Engine settings" (its widgets
are drawn only while it is open, ui/lazy_section.py) and move its gpu_memory_utilization slider; the other half
open the Batching page and move its Slots slider. A widget drawn inside a fragment (st.fragment: the light pages
run in one) reruns only that fragment, as the browser asks. A rerun's time is
from sending the changed widget to receiving `script_finished`. Errors: an exception element in a run, a run that
does not finish successfully, a run slower than 60 s, a dropped connection.

Prints p50/p95/max rerun time, reruns done, errors, and the server's resident memory (start, peak, end).

Usage: python -m benchmarks.bench_app_sessions [--sessions 20] [--seconds 120] [--url http://127.0.0.1:8501]
       (env SERVINGPLAN_LOAD_SECONDS overrides the default duration; without --url a server is started)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from planner.cli.app_cmd import local_server_options, streamlit_command

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 60.0
THINK_S = (0.2, 1.0)  # pause between two slider moves of one session (a person dragging, then reading)
FIT_SLIDER = "sb_util"  # sidebar: gpu_memory_utilization, 0.5-0.99
FIT_SECTION = "sb_open_engine"  # the sidebar section holding it ("Engine settings"), opened first as a user would
FINISHED_OK = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
BATCHING_PAGE, BATCHING_SLIDER = "batching", "batching_slots"  # Batching page: slots, 1-32


@dataclass
class Stats:
    rerun_s: list[float] = field(default_factory=list)
    page: list[str] = field(default_factory=list)  # the page each rerun ran
    errors: list[str] = field(default_factory=list)
    rss_bytes: list[int] = field(default_factory=list)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc/PID/stat), 0 when unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime in clock ticks
    except (OSError, IndexError, ValueError):
        return 0.0


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (Linux /proc), 0 when unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Session:
    """One websocket client: sends reruns with widget values, collects each run's messages."""

    def __init__(self, ws, name: str):
        self.ws, self.name = ws, name
        self.page_hash = ""
        self.pages: dict[str, str] = {}  # url path -> page script hash
        self.widget_ids: dict[str, str] = {}  # user key -> current widget id
        self.fragments: dict[str, str] = {}  # widget id -> the fragment drawing it (st.fragment), if any

    async def rerun(self, widgets: dict[str, float | bool] | None = None) -> list[str]:
        """Send one rerun and read until the run finishes; returns problems seen in the run."""
        msg = BackMsg()
        msg.rerun_script.page_script_hash = self.page_hash
        for key, value in (widgets or {}).items():
            if key not in self.widget_ids:
                return [f"{self.name}: no widget {key!r} on the page"]
            if self.widget_ids[key] in self.fragments:  # as the browser does: a widget in a fragment reruns it alone
                msg.rerun_script.fragment_id = self.fragments[self.widget_ids[key]]
            state = msg.rerun_script.widget_states.widgets.add()
            state.id = self.widget_ids[key]
            if isinstance(value, bool):  # an expander's open state (a stateful st.expander)
                state.bool_value = value
            else:
                state.double_array_value.data.append(value)
        await self.ws.send(msg.SerializeToString())
        return await asyncio.wait_for(self._read_run(), RUN_TIMEOUT_S)

    async def _read_run(self) -> list[str]:
        problems = []
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await self.ws.recv())
            kind = fwd.WhichOneof("type")
            if kind == "navigation":  # st.navigation: the pages and the one running now
                self.pages = {p.url_pathname: p.page_script_hash for p in fwd.navigation.app_pages}
                self.page_hash = fwd.navigation.page_script_hash or self.page_hash
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                self._note_element(fwd.delta.new_element, problems, fwd.delta.fragment_id)
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "add_block":
                self._note_id(fwd.delta.add_block.expandable.id, fwd.delta.fragment_id)
            elif kind == "script_finished":
                if fwd.script_finished not in FINISHED_OK:
                    problems.append(f"{self.name}: run finished with status {fwd.script_finished}")
                return problems

    def _note_element(self, element, problems: list[str], fragment_id: str = "") -> None:
        kind = element.WhichOneof("type")
        if kind == "exception":
            problems.append(f"{self.name}: {element.exception.type}: {element.exception.message[:200]}")
        elif kind in ("slider", "selectbox", "number_input"):
            self._note_id(getattr(element, kind).id, fragment_id)

    def _note_id(self, widget_id: str, fragment_id: str = "") -> None:
        """Remember a keyed widget's id (Streamlit's ids of keyed widgets end with -KEY)."""
        if "-" in widget_id:
            self.widget_ids[widget_id.rsplit("-", 1)[-1]] = widget_id
            if fragment_id:
                self.fragments[widget_id] = fragment_id

    async def open_page(self, url_path: str) -> list[str]:
        self.page_hash = self.pages.get(url_path, "")
        if not self.page_hash:
            return [f"{self.name}: no page {url_path!r} in {sorted(self.pages)}"]
        return await self.rerun()


async def run_session(ws_url: str, index: int, deadline: float, stats: Stats) -> None:
    rng = random.Random(index)
    on_batching = index % 2 == 1
    name = f"session {index} ({'Batching' if on_batching else 'Does it fit?'})"
    try:
        async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=2**26) as ws:
            session = Session(ws, name)
            stats.errors += await session.rerun()
            if on_batching:
                stats.errors += await session.open_page(BATCHING_PAGE)
            else:
                stats.errors += await session.rerun({FIT_SECTION: True})
            key = BATCHING_SLIDER if on_batching else FIT_SLIDER
            while time.monotonic() < deadline:
                await asyncio.sleep(rng.uniform(*THINK_S))
                value = float(rng.randint(1, 32)) if on_batching else rng.randint(50, 99) / 100
                start = time.perf_counter()
                problems = await session.rerun({key: value})
                stats.rerun_s.append(time.perf_counter() - start)
                stats.page.append("Batching" if on_batching else "Does it fit?")
                stats.errors += problems
                if key not in session.widget_ids:
                    break  # the page lost its slider: reported once, no point in repeating it
    except (TimeoutError, OSError, websockets.WebSocketException) as err:
        stats.errors.append(f"{name}: {type(err).__name__}: {err}")


async def _sample_rss(pid: int | None, deadline: float, stats: Stats) -> None:
    while pid and time.monotonic() < deadline:
        stats.rss_bytes.append(rss_bytes(pid))
        await asyncio.sleep(0.5)


async def _load(url: str, sessions: int, seconds: float, server_pid: int | None) -> Stats:
    stats = Stats()
    ws_url = url.replace("http://", "ws://").rstrip("/") + "/_stcore/stream"
    deadline = time.monotonic() + seconds
    await asyncio.gather(
        _sample_rss(server_pid, deadline + 1, stats),
        *(run_session(ws_url, i, deadline, stats) for i in range(sessions)),
    )
    return stats


def run_load(url: str, sessions: int = 20, seconds: float = 120, server_pid: int | None = None) -> dict:
    """Drive `sessions` concurrent sessions for `seconds`; returns the figures (times in s, memory in bytes)."""
    rss_start = rss_bytes(server_pid) if server_pid else 0
    cpu_start, wall_start = (cpu_s(server_pid) if server_pid else 0.0), time.monotonic()
    with ThreadPoolExecutor(1) as pool:  # its own thread, so a caller's running event loop (Playwright) is no bar
        stats = pool.submit(asyncio.run, _load(url, sessions, seconds, server_pid)).result()
    times = np.array(stats.rerun_s) if stats.rerun_s else np.array([np.nan])
    pages = np.array(stats.page)
    per_page = {p: float(np.percentile(times[pages == p], 95)) for p in sorted(set(stats.page))}
    return {
        "sessions": sessions,
        "seconds": seconds,
        "reruns": len(stats.rerun_s),
        "p50_rerun_s": float(np.percentile(times, 50)),
        "p95_rerun_s": float(np.percentile(times, 95)),
        "max_rerun_s": float(np.max(times)),
        "p95_rerun_s_by_page": per_page,
        "errors": stats.errors,
        "rss_start_bytes": rss_start,
        "rss_peak_bytes": max(stats.rss_bytes, default=0),
        "rss_end_bytes": rss_bytes(server_pid) if server_pid else 0,
        # the server's CPU over the run (first runs of the sessions included), per second and per rerun: a
        # Streamlit server is one process, so near 1 CPU-second per second means it is saturated
        "server_cpu_s": (cpu_s(server_pid) - cpu_start) if server_pid else None,
        "wall_s": time.monotonic() - wall_start,
    }


def start_server(app_dir: Path = ROOT) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        streamlit_command("app.py", local_server_options(port)),
        cwd=app_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("streamlit did not start")


def report(figures: dict) -> str:
    mb = 1e6
    lines = [
        f"{figures['sessions']} sessions × {figures['seconds']:g} s: {figures['reruns']:,} reruns, "
        f"{len(figures['errors'])} errors",
        f"rerun time  p50 {figures['p50_rerun_s'] * 1000:,.0f} ms   p95 {figures['p95_rerun_s'] * 1000:,.0f} ms   "
        f"max {figures['max_rerun_s'] * 1000:,.0f} ms   (p95 by page: "
        + ", ".join(f"{p} {t * 1000:,.0f} ms" for p, t in figures["p95_rerun_s_by_page"].items())
        + ")",
        f"server RSS  start {figures['rss_start_bytes'] / mb:,.0f} MB   peak {figures['rss_peak_bytes'] / mb:,.0f} MB"
        f"   end {figures['rss_end_bytes'] / mb:,.0f} MB",
    ]
    if figures.get("server_cpu_s"):
        cpu, runs = figures["server_cpu_s"], figures["reruns"] + figures["sessions"]  # reruns + first runs
        lines.append(
            f"server CPU  {cpu:,.1f} s over {figures['wall_s']:,.0f} s ({cpu / figures['wall_s']:.0%} of one "
            f"core), {cpu / runs * 1000:,.0f} ms per run"
        )
    lines += [f"  error: {e}" for e in figures["errors"][:20]]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("SERVINGPLAN_LOAD_SECONDS", 120)))
    ap.add_argument("--url", help="an already running server (RSS is then not measured)")
    args = ap.parse_args()
    proc = None
    if args.url:
        url = args.url
    else:
        proc, url = start_server()
    try:
        figures = run_load(url, args.sessions, args.seconds, proc.pid if proc else None)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=10)
    print(report(figures))
    return 1 if figures["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
