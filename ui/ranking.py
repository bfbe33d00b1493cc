"""The deployment ranking for people, and acting on an answer: load a ranked (or suggested) deployment into the
scenario the sidebar edits.

A restore must happen before the sidebar draws its widgets, so `use_scenario` queues the scenario and reruns; the
sidebar applies it at the top of the next run (ui.scenario_widgets.apply_pending_restores).
"""

from __future__ import annotations

import json
import re
import time

import pandas as pd
import streamlit as st
import streamlit.components.v1 as components

from planner.core.scenario import Scenario

PENDING_KEY = "sb_pending_scenario"
# row key -> (column name, scale); None scale = as is
COLUMNS = {
    "rank": ("#", None),
    "id": ("deployment", None),
    "max_rate_per_replica": ("req/s per replica", None),
    "replicas": ("replicas", None),
    "num_gpus": ("GPUs", None),
    "usd_per_hour": ("$ per hour", None),
    "usd_per_million_output_tokens": ("$ per M output tokens", None),
    "usd_per_million_tokens": ("$ per M tokens (in + out)", None),
    "ttft_p95_s": ("p95 TTFT (ms)", 1e3),
    "tpot_p95_s": ("p95 TPOT (ms)", 1e3),
    "e2e_p95_s": ("p95 end-to-end (s)", None),
    "pareto": ("Pareto-optimal", None),
    "reason": ("why not", None),
}
FORMATS = {
    "req/s per replica": "%.3g",
    "$ per hour": "$%.2f",
    "$ per M output tokens": "$%.3f",
    "$ per M tokens (in + out)": "$%.3f",
    "p95 TTFT (ms)": "%.0f",
    "p95 TPOT (ms)": "%.1f",
    "p95 end-to-end (s)": "%.2f",
}


def ranking_table(rows: list[dict]) -> pd.DataFrame:
    """The ranking with named columns in display units (ms for TTFT/TPOT, $ for costs), rounded for reading."""
    df = pd.DataFrame(rows)
    out = pd.DataFrame()
    for key, (name, scale) in COLUMNS.items():
        if key in df:
            col = pd.to_numeric(df[key], errors="coerce") * scale if scale else df[key]
            out[name] = col
    for name, digits in (
        ("req/s per replica", 3),
        ("$ per hour", 2),
        ("$ per M output tokens", 3),
        ("$ per M tokens (in + out)", 3),
        ("p95 TTFT (ms)", 0),
        ("p95 TPOT (ms)", 1),
        ("p95 end-to-end (s)", 2),
    ):
        if name in out:
            out[name] = pd.to_numeric(out[name], errors="coerce").round(digits)
    return out


def column_config() -> dict:
    return {name: st.column_config.NumberColumn(name, format=fmt) for name, fmt in FORMATS.items()}


def ranking_key(s: Scenario) -> str:
    """The scenario minus what the ranking varies (GPU, precision, TP, GPU count): loading a ranked deployment
    keeps the ranking (and its runner-up) valid for the new scenario."""
    dep = s.deployment.model_copy(update={"weights": "", "tensor_parallel_size": 1, "num_gpus": 1})
    return s.model_copy(update={"gpu": "", "gpu_memory_gb": None, "deployment": dep}).model_dump_json()


def progress_text(bar):
    """A progress(done, total) callback for recommend() that fills `bar` and says the time left, estimated as
    elapsed × (total − done) / done (total in simulations, shrinking as deployments are ruled out)."""
    start = time.perf_counter()

    def update(done: int, total: int) -> None:
        elapsed = time.perf_counter() - start
        left = elapsed * (total - done) / done if done else None
        text = f"{done / total:.0%} of the simulations done" + (
            f", about {left:,.0f} s left" if left is not None and done < total else ""
        )
        bar.progress(min(done / total, 1.0), text=text)

    return update


def use_scenario(s: Scenario, message: str, scroll_to: str | None = None) -> None:
    """Queue `s` for the sidebar and rerun (module note); `scroll_to`: the anchor the next run scrolls back to
    (scroll_back_to), when what changed is above the button."""
    st.session_state[PENDING_KEY] = s
    st.session_state["sb_pending_message"] = message
    if scroll_to:
        st.session_state[SCROLL_KEY] = scroll_to
    st.rerun()


SCROLL_KEY = "_scroll_to_anchor"
# Streamlit has no scroll API: a zero-height component (an iframe of the app's origin, so it may reach the page)
# scrolls its parent to the element whose id is the anchor, retrying for 5 s while the page is still drawn.
_SCROLL_SCRIPT = """<script>
const doc = window.parent.document;
let tries = 0;
const timer = setInterval(() => {
  const el = doc.getElementById(%s);
  if (el || ++tries > 50) {
    clearInterval(timer);
    if (el) el.scrollIntoView({block: "start"});
  }
}, 100);
</script>"""


def scroll_back_to(anchor: str) -> None:
    """After use_scenario(..., scroll_to=anchor), scroll the page to the heading with that anchor (once)."""
    if st.session_state.get(SCROLL_KEY) != anchor:
        return
    del st.session_state[SCROLL_KEY]
    if not re.fullmatch(r"[a-z0-9-]{1,64}", anchor):  # a heading's anchor from the code, never user data
        raise ValueError(f"not an anchor: {anchor!r}")
    components.html(_SCROLL_SCRIPT % json.dumps(anchor), height=0)  # the one script (tests/test_static_safety.py)
