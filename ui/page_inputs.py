"""Page inputs that change a page's answer travel in the shared link too, next to the scenario.

Only the inputs listed here, each checked against its widget's range or choices before a restore sets it (a bad
value is reported by name and skipped). Streamlit keeps a widget's value only while its page is shown, so a link
carries the inputs of the page it was copied on, which is the page it reopens.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from planner.capacity.autoscale import METRICS
from planner.core.engine_defaults import ENGINES

LATENCY_MODES = ["Continuous batching (as vllm bench serve)", "Static batch (primer §5)", "Given rates (primer §5)"]
# widget key -> int | float (lo, hi) | list of choices | bool
PAGE_INPUTS: dict[str, tuple] = {
    "latency_mode": ("choice", LATENCY_MODES),
    "latency_engine": ("choice", list(ENGINES)),
    "latency_batch": ("int", 1, 4096),
    "latency_queue_Stati": ("float", 0.0, 1e6),
    "latency_queue_Given": ("float", 0.0, 1e6),
    "cap_shape": ("choice", ["diurnal", "trace"]),
    "cap_amplitude": ("float", 0.0, 0.95),
    "cap_metric": ("choice", list(METRICS)),
    "cap_scale_target": ("float", 0.3, 1.0),
    "cap_min_replicas": ("int", 1, 1000),
    "cap_node_start": ("float", 0.0, 3600.0),
    "cap_network": ("float", 0.01, 100.0),
    "cap_cooldown": ("float", 0.0, 7200.0),
    "tech_batch": ("int", 1, 100_000),
    "tech_alpha": ("float", 0.0, 0.99),
    "tech_k": ("int", 1, 10),
    "batching_slots": ("int", 1, 32),
    "batching_max_wait": ("int", 0, 200),
    "batching_seed": ("int", 0, 2**31 - 1),
}
# restored into another key: the latency slider starts from "latency_batch_wanted", clamped to its maximum
RESTORE_AS = {"latency_batch": "latency_batch_wanted"}


def page_query() -> dict[str, str]:
    """The listed inputs the current page has drawn, as query parameters."""
    out = {}
    for key, spec in PAGE_INPUTS.items():
        if key in st.session_state:
            value = st.session_state[key]
            out[key] = f"{value:g}" if spec[0] == "float" else str(value)
    return out


def _value(key: str, raw: str):
    spec = PAGE_INPUTS[key]
    if spec[0] == "choice":
        if raw not in spec[1]:
            raise ValueError(f"must be one of {', '.join(map(str, spec[1]))}")
        return raw
    try:
        value = int(raw) if spec[0] == "int" else float(raw)
    except ValueError:
        raise ValueError(f"must be a {'whole ' if spec[0] == 'int' else ''}number, got {raw!r}") from None
    if not spec[1] <= value <= spec[2]:
        raise ValueError(f"must be between {spec[1]:,} and {spec[2]:,}")
    return value


def follow_scenario(key: str, scenario_value: str) -> None:
    """A page's own choice that starts from the scenario's (the Latency page's engine profile): set to the scenario's
    value before the widget draws when the widget has none yet or the scenario's value changed since the page last
    drew; a value the user picked or a shared link restored is kept while the scenario's stays the same."""
    seen_key = f"{key}_scenario"
    seen = st.session_state.get(seen_key)
    if key not in st.session_state or (seen is not None and seen != scenario_value):
        st.session_state[key] = scenario_value
    st.session_state[seen_key] = scenario_value


def restore_page_inputs(params: Mapping[str, str]) -> list[str]:
    """Set the listed inputs found in `params` (before their widgets draw); return messages for bad ones."""
    errors = []
    for key in PAGE_INPUTS.keys() & params.keys():
        try:
            value = _value(key, params[key])
        except ValueError as err:
            errors.append(f"Shared link: {key} ignored: {err}")
            continue
        st.session_state[RESTORE_AS.get(key, key)] = value
    return errors
