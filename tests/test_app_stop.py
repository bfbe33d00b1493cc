"""The app's Stop button ends a running ranking: a real server, driven over Streamlit's websocket protocol as a
browser does (click "Rank all deployments", wait for the Stop button, click it). The run ends at its next progress
update, the next run says it stopped, and the ranking's worker processes are gone (issue 22: a progress bar and a
cancel for long runs)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time

import pytest
import websockets
from conftest import ROOT
from process_tree import descendants
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.bench_app_sessions import start_server

pytestmark = pytest.mark.slow


class Browser:
    def __init__(self, ws):
        self.ws, self.pages, self.page_hash, self.buttons, self.alerts = ws, {}, "", {}, []

    async def run(self, button: str | None = None, until_button: str | None = None) -> int | None:
        """Send a rerun (clicking `button`); read until the run finishes (its status) or `until_button` appears."""
        msg = BackMsg()
        msg.rerun_script.page_script_hash = self.page_hash
        if button:
            state = msg.rerun_script.widget_states.widgets.add()
            state.id, state.trigger_value = self.buttons[button], True
        await self.ws.send(msg.SerializeToString())
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await asyncio.wait_for(self.ws.recv(), 300))
            kind = fwd.WhichOneof("type")
            if kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash for p in fwd.navigation.app_pages}
                self.page_hash = fwd.navigation.page_script_hash or self.page_hash
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                if element.WhichOneof("type") == "button":
                    key = element.button.id.rsplit("-", 1)[-1]
                    self.buttons[key] = element.button.id
                    if key == until_button:
                        return None
                elif element.WhichOneof("type") == "alert":
                    self.alerts.append(element.alert.body)
                elif element.WhichOneof("type") == "exception":
                    raise AssertionError(element.exception.message)
            elif kind == "script_finished":
                return fwd.script_finished


def run_coroutine(coro):
    """asyncio.run in a thread of its own: a Playwright test run before this one in the same worker process (pytest
    -n 2) leaves an event loop running in the main thread, where asyncio.run refuses to start another."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def test_stop_ends_the_ranking_and_its_workers():
    proc, url = start_server(ROOT)
    try:
        run_coroutine(_stop_the_ranking(url, proc.pid))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def _stop_the_ranking(url: str, server_pid: int) -> None:
    stream = url.replace("http://", "ws://") + "/_stcore/stream"
    async with websockets.connect(stream, subprotocols=["streamlit"]) as ws:
        b = Browser(ws)
        assert await b.run() == ForwardMsg.FINISHED_SUCCESSFULLY
        b.page_hash = b.pages["capacity"]
        assert await b.run() == ForwardMsg.FINISHED_SUCCESSFULLY
        await b.run(button="cap_rank", until_button="cap_rank_stop")
        for _ in range(600):  # polled: the ranking's workers have started
            if len(descendants(server_pid)) >= 4:  # forkserver, resource tracker and the workers
                break
            time.sleep(0.25)
        assert len(descendants(server_pid)) >= 4
        # the click interrupts the running ranking (ended early for a rerun), then the rerun runs to the end
        status = await b.run(button="cap_rank_stop")
        if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            status = await b.run()
        assert status == ForwardMsg.FINISHED_SUCCESSFULLY
        assert any("The ranking stopped before it finished" in a for a in b.alerts), b.alerts
        for _ in range(40):  # a stopped pool's workers are terminated (worker_pool.py)
            if len(descendants(server_pid)) <= 2:
                break
            time.sleep(0.25)
        assert len(descendants(server_pid)) <= 2, descendants(server_pid)
