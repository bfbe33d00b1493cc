"""The session's own upload folder: a temporary directory held in session state, so it goes when the session goes.

Streamlit drops a session's state when the tab has been closed for its reconnect window (or at shutdown); the
TemporaryDirectory's finalizer then removes the folder and every trace uploaded in it. Pages save uploads only here
and let length specs name only files found here (planner/traffic/trace_refs.py).
"""

from __future__ import annotations

import inspect
import math
import tempfile
from pathlib import Path

import streamlit as st

UPLOADS_KEY = "_session_uploads"


def session_upload_dir() -> Path:
    """This session's upload folder (created on first use)."""
    held = st.session_state.get(UPLOADS_KEY)
    if not isinstance(held, tempfile.TemporaryDirectory) or not Path(held.name).is_dir():
        held = tempfile.TemporaryDirectory(prefix="servingplan_session_")
        st.session_state[UPLOADS_KEY] = held
    return Path(held.name)


def upload_limit(max_bytes: int) -> dict:
    """file_uploader keyword arguments that make Streamlit show and enforce a reader's own cap ("1MB per file" instead
    of the server's 200MB): `max_upload_size` in whole MB, rounded up. Streamlit refuses a larger file in the
    browser, counting 10^6 bytes per MB ("File must be 1.0MB or smaller": a 1,000,010-byte config.json, checked in
    headless Chromium), so a 1,000,000-byte cap is exact and a smaller one (a saved scenario's 200,000) still gets
    the reader's one-line error. Streamlit before the argument (1.40-1.52) shows the server's limit."""
    if "max_upload_size" not in inspect.signature(st.file_uploader).parameters:
        return {}
    return {"max_upload_size": max(1, math.ceil(max_bytes / 1e6))}
