"""The Batching page's results and figures, cached across sessions by the page's inputs (plain values).

Cached functions live in a module, not in the page script: a page re-executes its `@st.cache_*` decorators on
every rerun, and each one reads its function's source to key the cache (inspect.getsource: 10% of a Batching
rerun's CPU under 20 sessions). Every function is keyed by the inputs themselves (source, seed, CSV text, spread,
slots, waits), never by a request set, which Streamlit would hash array by array on each call. Figures are frozen
(ui/charts/frozen.py): serialised once per input set, not on each rerun.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd
import streamlit as st
from plotly.graph_objects import Figure

from planner.batching.report import Summary, comparison_frame, requests_frame, spread_sweep, summarize
from planner.batching.requests import SCENARIOS, RequestSet, parse_requests_csv, to_csv, with_spread
from planner.batching.step_model import bucketing_pair, dynamic_policy, run_pair
from ui.charts import batching as charts
from ui.charts.frozen import freeze

SWEEP_MAX_REQUESTS = 20_000  # the spread sweep reruns both policies 7 times: skip it for big uploads


class Inputs(NamedTuple):
    """The page's request set and the static/continuous settings (the cache key of every result below; a tuple,
    which Streamlit hashes item by item, where a dataclass would be deep-copied into a dict first)."""

    source: str
    seed: int
    csv_text: str | None
    spread: float
    slots: int
    max_wait: int


@dataclass(frozen=True)
class Comparison:
    """Static vs continuous on one input set: the request count, each policy's summary, the frozen figures."""

    num_requests: int
    summaries: dict[str, Summary]
    figures: dict[str, Figure]  # gantt, running, cdf, and sweep unless the set is too big for it


@dataclass(frozen=True)
class Dynamic:
    """The dynamic batcher on one input set: the chosen variant's summary, one queue's, bucketed's, the figures."""

    chosen: Summary
    one_queue: Summary
    bucketed: Summary
    gantt: Figure
    padding: Figure | None  # None when the requests have no prompt lengths


@st.cache_data(show_spinner=False, max_entries=32)
def base_requests(source: str, seed: int, csv_text: str | None) -> RequestSet:
    """The built-in set `source` drawn with `seed`, or the uploaded CSV (InputError naming the bad row)."""
    if source == "upload":
        return parse_requests_csv(csv_text or "", source="uploaded CSV")
    return SCENARIOS[source][0](seed=seed)


def requests_of(i: Inputs) -> RequestSet:
    return with_spread(base_requests(i.source, i.seed, i.csv_text), i.spread)


@st.cache_resource(show_spinner=False, max_entries=64)
def comparison(i: Inputs) -> Comparison:
    """Static vs continuous (cache_resource: shared read-only by every session, no copy per rerun)."""
    requests = requests_of(i)
    results = run_pair(requests, i.slots, i.max_wait)
    figures = {
        "gantt": charts.gantt(results),
        "running": charts.running_over_time(results),
        "cdf": charts.wait_latency_cdf(results),
    }
    if len(requests) <= SWEEP_MAX_REQUESTS:
        figures["sweep"] = charts.spread_gap(spread_sweep(requests, i.slots, i.max_wait))
    return Comparison(
        len(requests),
        {name: summarize(r) for name, r in results.items()},
        {name: freeze(fig) for name, fig in figures.items()},
    )


@st.cache_resource(show_spinner=False, max_entries=16)
def tables(i: Inputs) -> dict[str, pd.DataFrame | str]:
    """The summary and per-request tables (first 5,000 rows each) and the requests as CSV."""
    requests = requests_of(i)
    results = run_pair(requests, i.slots, i.max_wait)
    return {
        "summary": comparison_frame(results),
        "static": requests_frame(results["static"]).head(5000),
        "continuous": requests_frame(results["continuous"]).head(5000),
        "csv": to_csv(requests),
    }


@st.cache_resource(show_spinner=False, max_entries=64)
def dynamic(i: Inputs, policy: tuple[int, int, int | None, bool, bool]) -> Dynamic:
    """The one-GPU dynamic batcher: policy = (max batch, max wait, queue limit or None, hold batch, bucketing)."""
    max_batch, dyn_wait, queue_limit, hold, bucketing = policy
    requests = requests_of(i)
    variants = bucketing_pair(requests, i.slots, dynamic_policy(max_batch, dyn_wait, queue_limit, hold_batch=hold))
    chosen = variants["bucketed" if bucketing else "one queue"]
    padding = freeze(charts.padding_bars(variants)) if any(requests.prompt_tokens) else None
    return Dynamic(
        summarize(chosen),
        summarize(variants["one queue"]),
        summarize(variants["bucketed"]),
        freeze(charts.gantt({"dynamic": chosen})),
        padding,
    )
