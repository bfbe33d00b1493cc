"""Tables for people (issue 27 #16, #20): a free-text column (a "note") wide enough for its longest entry (Streamlit's
dataframe cells do not wrap, and its "large" width cut a 151-character note at about 60), and a missing figure
shown as "–" instead of Streamlit's grey "None"."""

from __future__ import annotations

import inspect
from collections.abc import Iterable

import streamlit as st

PX_PER_CHAR = 7  # Streamlit's dataframe font (Source Sans, 14 px): ~6.5 px per character of prose
MAX_PX = 1400  # beyond this the table scrolls sideways to the rest


def text_column(label: str, texts: Iterable) -> st.column_config.Column:
    """A TextColumn as wide as its longest text (in pixels), at least 200 px."""
    longest = max((len(str(t)) for t in texts if t is not None), default=0)
    width = min(MAX_PX, max(200, PX_PER_CHAR * longest + 24))
    return st.column_config.TextColumn(label, width=width)


def empty_cells() -> dict:
    """st.dataframe keyword arguments that show a missing figure (a deployment not searched, a layout that cannot
    start) as "–" (its `placeholder`, from Streamlit 1.5x; older versions keep "None")."""
    return {"placeholder": "–"} if "placeholder" in inspect.signature(st.dataframe).parameters else {}
