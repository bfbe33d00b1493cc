"""The "Does it fit?" page's results, cached across sessions by the scenario: the memory plan, the tensor-parallel
table ready to draw, the two charts (frozen, ui/charts/frozen.py) and the launch commands.

A module, not the page script: a page re-executes its `@st.cache_*` decorators on every rerun and each reads its
function's source to key the cache. The TP table is kept as an Arrow table (what st.dataframe sends), so a rerun
does not convert a DataFrame again; the charts are serialised once per scenario.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import streamlit as st
from plotly.graph_objects import Figure

from planner.capacity.launch import LaunchPlan, launch_plan
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.memory.plan import MemoryPlan, breakdown_per_gpu, plan_memory
from planner.memory.plan_sweeps import concurrency_vs_context, tp_options
from ui.charts.frozen import freeze
from ui.charts.memory import concurrency_vs_context as concurrency_chart
from ui.charts.memory import memory_stack
from ui.tables import text_column

TP_COLUMNS = [
    "tp",
    "gpus",
    "fits",
    "weights_per_gpu_GB",
    "kv_pool_per_gpu_GiB",
    "kv_cache_tokens",
    "max_concurrency",
    "textbook_max_requests",
    "note",
]


@dataclass(frozen=True)
class FitView:
    plan: MemoryPlan
    tp_table: pa.Table  # one row per TP degree, TP_COLUMNS
    tp_columns: dict  # st.dataframe column_config of tp_table
    concurrency_fig: Figure
    stack_fig: Figure
    launch: LaunchPlan | InputError  # the launch commands, or why there are none


def _tp_table(rows: list[dict], engine: str = "vLLM") -> tuple[pa.Table, dict]:
    df = pd.DataFrame(rows)
    df["weights_per_gpu_GB"] = df.pop("weights_per_gpu_bytes") / 1e9
    df["kv_pool_per_gpu_GiB"] = df.pop("kv_pool_per_gpu_bytes") / 2**30
    config = {
        "weights_per_gpu_GB": st.column_config.NumberColumn("weights per GPU (GB)", format="%.2f"),
        "kv_pool_per_gpu_GiB": st.column_config.NumberColumn("KV pool per GPU (GiB)", format="%.2f"),
        "kv_cache_tokens": st.column_config.NumberColumn("KV tokens", format="%d"),
        "max_concurrency": st.column_config.NumberColumn(f"{engine} concurrency", format="%.2fx"),
        "textbook_max_requests": st.column_config.NumberColumn("textbook fit", format="%d"),
        "note": text_column("note", df["note"]),  # as wide as the longest note (issue 27 #20: it was cut)
    }
    return pa.Table.from_pandas(df[TP_COLUMNS], preserve_index=False), config


@st.cache_resource(show_spinner=False, max_entries=256)
def fit_view(scenario_json: str) -> FitView:
    """Everything the page draws from one scenario, shared read-only by every session (cache_resource)."""
    scenario = Scenario.model_validate_json(scenario_json)
    r = resolve(scenario)
    plan = plan_memory(r)
    gb = r.gpu.marketed_bytes
    textbook_kv = plan.textbook_max_requests * plan.kv_bytes_per_request / plan.tensor_parallel_size
    bars = {
        "textbook (marketed GB)": {
            "weights": plan.weight_bytes_per_gpu,
            "KV for requests": textbook_kv,
            "free": gb - plan.weight_bytes_per_gpu - textbook_kv,
        }
    }
    for i in range(min(r.deployment.tensor_parallel_size, 8)):
        bars[f"{r.engine.label}: GPU {i}"] = breakdown_per_gpu(plan)
    try:
        launch: LaunchPlan | InputError = launch_plan(r, scenario.engine)
    except InputError as err:
        launch = err
    table, columns = _tp_table(tp_options(r), r.engine.label)
    return FitView(
        plan,
        table,
        columns,
        freeze(concurrency_chart(concurrency_vs_context(r), r.engine.label)),
        freeze(memory_stack(bars, "Where the memory goes, per GPU")),
        launch,
    )
