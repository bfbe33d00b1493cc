"""Report downloads on every page: the sizing CSV, and a zip of the Markdown report with its charts as PNG.

The CSV is small and built on each run (cached per scenario). The zip renders PNGs with kaleido (Debian's
chromium), so it is built only when the user clicks (a deferred download), against one kaleido server started
once per process.
"""

from __future__ import annotations

import io
import warnings
import zipfile

import kaleido
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.latency.metrics import memory_limit
from planner.memory.plan import breakdown_per_gpu, plan_memory
from planner.memory.plan_sweeps import concurrency_vs_context
from planner.report import report_rows, to_csv, to_markdown
from ui.cached import capacity_cached, continuous_cached
from ui.charts.latency import tradeoff_chart
from ui.charts.memory import concurrency_vs_context as concurrency_chart
from ui.charts.memory import memory_stack
from ui.labels import error_text
from ui.ranking import ranking_key
from ui.workload_widgets import lengths_of

PNG_SIZE = (1000, 450)  # pixels


def chart_figures(scenario: Scenario) -> dict[str, go.Figure]:
    """The report's charts: memory per GPU, concurrency against context, and the latency-throughput curve."""
    r = resolve(scenario)
    plan = plan_memory(r)
    figs = {
        "memory_per_gpu": memory_stack(
            {f"{r.engine.label}: one GPU": breakdown_per_gpu(plan)}, "Where the memory goes, per GPU"
        ),
        "concurrency_vs_context": concurrency_chart(concurrency_vs_context(r), r.engine.label),
    }
    req = lengths_of(scenario.traffic)
    prompt, output = req.prompt_tokens, req.output_tokens
    try:
        limit = min(memory_limit(r, prompt, output), 4096)
        if limit >= 1 and prompt + output <= r.max_model_len:
            top = max(2, min(limit, r.deployment.max_num_seqs))
            sj = scenario.model_dump_json()
            df = pd.DataFrame(
                [
                    continuous_cached(sj, scenario.engine, int(b), prompt, output)
                    for b in np.unique(np.round(np.geomspace(1, top, 10)).astype(int))
                ]
            )
            df["batch"] = df["concurrency"]
            figs["latency_throughput"] = tradeoff_chart(df).update_layout(
                title=f"Per-user speed vs server throughput, continuous batching ({prompt:,} + {output:,} tokens)"
            )
    except InputError:
        pass  # the CSV already says why there is no latency estimate
    return figs


@st.cache_resource(show_spinner=False)
def _kaleido_server() -> bool:
    """Start kaleido's browser once per process: later exports take ~0.2 s instead of ~3 s."""
    kaleido.start_sync_server()
    return True


def to_png(fig: go.Figure) -> bytes:
    _kaleido_server()
    sized = go.Figure(fig).update_layout(width=PNG_SIZE[0], height=PNG_SIZE[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "kopts ignored when using a server": the layout sets the size
        return sized.to_image(format="png")


def plan_report_rows(scenario: Scenario) -> list:
    """The report rows with the capacity search shared with Capacity & cost (cached across sessions) and, when the
    user ranked deployments for this very scenario, the ranking (for the runner-up) and its prices."""
    stored = st.session_state.get("cap_ranking")
    ranking, prices = None, ()
    if stored and stored[0][0] == ranking_key(scenario):
        ranking, prices = stored[1], stored[0][-1]
    try:
        cap = capacity_cached(scenario.model_dump_json(), tuple(prices))
    except InputError as err:
        cap = err  # the report says why the capacity was not searched
    return report_rows(scenario, ranking, dict(prices), capacity=cap)


def report_csv(scenario: Scenario) -> str:
    return to_csv(plan_report_rows(scenario))


def report_zip(scenario: Scenario) -> bytes:
    """report.md + one PNG per chart + report.csv, zipped."""
    rows = plan_report_rows(scenario)
    images = {name: to_png(fig) for name, fig in chart_figures(scenario).items()}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("report.md", to_markdown(rows, images, title=f"Sizing report: {resolve(scenario).model.name}"))
        z.writestr("report.csv", to_csv(rows))
        for name, png in images.items():
            z.writestr(f"{name}.png", png)
    return buf.getvalue()


def render_report_downloads(scenario: Scenario) -> None:
    """A CSV download and a Markdown+PNG zip download (built only when clicked) of the scenario's sizing report."""
    try:
        resolve(scenario)
    except InputError as err:
        st.caption(f"No report: {error_text(err)}")
        return
    st.download_button(
        "Sizing report (CSV)",
        lambda: report_csv(scenario),
        file_name="servingplan-report.csv",
        mime="text/csv",
        key="report_csv",
        on_click="ignore",
        icon=":material/download:",
        width="stretch",
        help="The plan (replicas, $, the SLO and whether it holds) and every input "
        "and output behind it: section,name,value,unit,note. Built when you click (one capacity "
        "search, shared with Capacity & cost).",
    )
    st.download_button(
        "Report with charts (Markdown + PNG, zip)",
        lambda: report_zip(scenario),
        file_name="servingplan-report.zip",
        mime="application/zip",
        key="report_zip",
        on_click="ignore",
        icon=":material/folder_zip:",
        width="stretch",
        help="Built when you click: the charts are rendered to PNG (a few seconds the first time).",
    )
