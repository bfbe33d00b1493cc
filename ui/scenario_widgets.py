"""Restoring a scenario into the sidebar's widgets (from a shared URL or a saved JSON) and sharing it back.

Streamlit lets a widget's value be set through its key only before the widget is drawn in a run, so restores
are applied at the top of the sidebar: the URL once per session, an uploaded scenario once per file.
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from planner.core.catalog import get_gpu, kv_precisions, model_presets, weight_precisions
from planner.core.engine import engine_for
from planner.core.errors import InputError
from planner.core.hf_config import spec_document
from planner.core.scenario import Scenario
from planner.core.scenario_codec import MAX_SCENARIO_BYTES, from_json, from_query, to_json, to_query
from ui.page_inputs import page_query, restore_page_inputs
from ui.parallelism import widget_values as parallelism_values
from ui.state import calibration_to_state
from ui.uploads import upload_limit
from ui.workload_widgets import widget_values as workload_values

TP_CHOICES = [1, 2, 4, 8]
# widget key -> (min, max) of its number_input / slider, checked before a restore sets it
RANGES = {
    "sb_gpu_mem_gb": (1.0, 2000.0),
    "sb_num_gpus": (1, 1024),
    "sb_util": (0.5, 0.99),
    "sb_max_len": (128, 10_000_000),
    "sb_max_seqs": (1, 4096),
    "sb_batched": (16, 1_000_000),
    "sb_recv_interval": (1, 1000),
    "sb_batch_wait_iters": (0, 1000),
    "sb_batch_wait_ratio": (0.0, 1.0),
    "sb_mfs": (0.05, 1.0),
}
PARAM_OF = {
    "sb_gpu_mem_gb": "gpu_gb",
    "sb_num_gpus": "gpus",
    "sb_util": "util",
    "sb_max_len": "maxlen",
    "sb_max_seqs": "seqs",
    "sb_batched": "batched",
    "sb_recv_interval": "recv",
    "sb_batch_wait_iters": "bwi",
    "sb_batch_wait_ratio": "bwr",
    "sb_mfs": "mfs",
}


def widget_values(s: Scenario, upload_choice: str) -> dict:
    """The sidebar widget values that reproduce scenario `s` (InputError when a value has no widget)."""
    d = s.deployment
    engine_default = engine_for(s.engine).batch_defaults(get_gpu(s.gpu))  # limits left unset: the engine's
    if s.model_spec is None and s.model not in model_presets():
        raise InputError("model", f"{s.model!r} is not a preset; share a custom model as its spec")
    values = {
        "sb_model": upload_choice if s.model_spec is not None else s.model,
        "sb_gpu": get_gpu(s.gpu).id,
        "sb_custom_mem": s.gpu_memory_gb is not None,
        "sb_tp": d.tensor_parallel_size,
        "sb_num_gpus": d.num_gpus,
        "sb_weights": d.weights,
        "sb_kv": d.kv_cache_dtype,
        "sb_util": d.gpu_memory_utilization,
        "sb_set_maxlen": d.max_model_len is not None,
        "sb_block": d.block_size,
        "sb_set_batch": d.max_num_seqs is not None or d.max_num_batched_tokens is not None,
        "sb_max_seqs": d.max_num_seqs or engine_default.max_num_seqs,
        "sb_batched": d.max_num_batched_tokens or engine_default.max_num_batched_tokens,
        "sb_eager": d.enforce_eager,
        "sb_mixed_chunk": d.enable_mixed_chunk,
        "sb_recv_interval": d.scheduler_recv_interval,
        "sb_batch_wait_iters": d.batch_wait_timeout_iters,
        "sb_batch_wait_ratio": float(d.batch_wait_max_tokens_ratio),
        "sb_set_mfs": d.mem_fraction_static is not None,
        "sb_mfs": float(d.mem_fraction_static or 0.85),
        "sb_engine": s.engine,  # no widget: the sidebar keeps it for the next scenario (the link's engine)
        **workload_values(s),
    }
    values.update(parallelism_values(d))  # ui/parallelism.py
    if s.model_spec is not None:
        values["sb_config_paste"] = spec_document(s.model_spec)
    if s.gpu_memory_gb is not None:
        values["sb_gpu_mem_gb"] = float(s.gpu_memory_gb)
    if d.max_model_len is not None:
        values["sb_max_len"] = d.max_model_len
    _check_choices(values)
    return values


def _check_choices(values: dict) -> None:
    if values["sb_tp"] not in TP_CHOICES:
        raise InputError("tp", f"must be one of {TP_CHOICES}")
    if values["sb_weights"] not in weight_precisions():
        raise InputError("w", f"unknown weight precision {values['sb_weights']!r}")
    if values["sb_kv"] not in kv_precisions():
        raise InputError("kv", f"unknown KV-cache dtype {values['sb_kv']!r}")
    if values["sb_block"] not in (8, 16, 32):
        raise InputError("block", "must be 8, 16 or 32")
    for key, (lo, hi) in RANGES.items():
        if key in values and not lo <= values[key] <= hi:
            raise InputError(PARAM_OF[key], f"must be between {lo:,} and {hi:,}")


def _apply(s: Scenario, upload_choice: str) -> None:
    values = widget_values(s, upload_choice)
    calibration_to_state(s.calibration)  # a saved file or a link carries the user's calibration (checked here)
    for key, value in values.items():
        st.session_state[key] = value
    st.session_state.pop("scenario", None)  # the restored scenario replaces the last valid one


def apply_pending_restores(upload_choice: str) -> list[str]:
    """Apply a shared URL (first run of a session) or a newly uploaded scenario JSON; return error messages."""
    errors = []
    if not st.session_state.get("sb_url_restored"):
        st.session_state["sb_url_restored"] = True
        params = st.query_params.to_dict()
        if params:
            try:
                _apply(from_query(params), upload_choice)
            except InputError as err:
                errors.append(f"Shared link ignored: {err.field}: {err.message}")
            errors += restore_page_inputs(params)
    pending = st.session_state.pop("sb_pending_scenario", None)  # "Use this deployment" (ui/ranking.py)
    if isinstance(pending, Scenario):
        try:
            _apply(pending, upload_choice)
            st.session_state["sb_last_loaded"] = pending
        except InputError as err:
            errors.append(f"Could not load that deployment: {err.field}: {err.message}")
    upload = st.session_state.get("sb_scenario_file")
    if upload is not None and getattr(upload, "file_id", None) != st.session_state.get("sb_applied_file"):
        st.session_state["sb_applied_file"] = getattr(upload, "file_id", None)
        try:
            _apply(from_json(upload.getvalue(), source=upload.name), upload_choice)
        except InputError as err:
            errors.append(f"{err.field}: {err.message}")
    return errors


def render_share_box(s: Scenario) -> None:
    """Keep the URL in step with the scenario; offer the link, a scenario JSON download and a JSON upload."""
    query = {**to_query(s), **page_query()}
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)
    box = st.expander("Share or save this scenario", key="sb_open_share", on_change="rerun")
    if not box.open:
        return  # drawn only while open (ui/lazy_section.py); the link above is kept in step either way
    with box:
        base = (st.context.url or "").split("?")[0]
        st.caption("Copy link (the copy button is at the right of the box):")
        st.code(f"{base}?{urlencode(query)}", language=None, wrap_lines=True)
        st.download_button(
            "Save scenario JSON",
            lambda: to_json(s),
            file_name="scenario.json",
            mime="application/json",
            key="sb_save_scenario",
            on_click="ignore",
        )  # built on click
        st.file_uploader(
            "Load a saved scenario JSON",
            type=["json"],
            key="sb_scenario_file",
            help=f"At most {MAX_SCENARIO_BYTES:,} bytes.",
            **upload_limit(MAX_SCENARIO_BYTES),
        )
