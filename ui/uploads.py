"""The session's own upload folder: a temporary directory held in session state, so it goes when the session goes.

Streamlit drops a session's state when the tab has been closed for its reconnect window (or at shutdown); the
TemporaryDirectory's finalizer then removes the folder and every trace uploaded in it. Pages save uploads only here
and let length specs name only files found here (planner/traffic/trace_refs.py).
"""

from __future__ import annotations

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
