"""Sidebar sections that draw their widgets only while open, keeping every value the user entered.

One Streamlit server process runs every session's reruns on one interpreter, and each widget costs a rerun its
registration, its session-state lookups and its protobuf (README, "Many users"). The sidebar's folded sections
(engine settings, traffic details, parallelism, sharing) held half of its ~45 elements, drawn on every rerun though
most users never open them. A lazy section is a stateful expander (`on_change="rerun"`: opening it reruns the app)
whose widget calls go through a `Section`: open, they draw the widget as before, with
`persist_state="session"` so its value outlives a closed section; closed, they return the widget's value from
session state (what the user set, what a shared link or saved scenario restored, else the widget's own default).
One code path for both, so a closed section yields exactly the values the open one would show.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

KEEP = "session"  # persist_state: a value outlives its widget while the section is closed, on every page


class Section:
    """The widget calls of one lazy section (module note): drawn into `box` when it is open, else read back."""

    def __init__(self, box=None):
        self.box = box  # an open section's container; None when closed

    @property
    def open(self) -> bool:
        return self.box is not None

    def slider(self, label: str, min_value, max_value, value, step=None, *, key: str, **kwargs):
        if self.open:
            return self.box.slider(label, min_value, max_value, value, step, key=key, persist_state=KEEP, **kwargs)
        return st.session_state.get(key, value)

    def number_input(self, label: str, min_value, max_value, value, *, key: str, **kwargs):
        if self.open:
            return self.box.number_input(label, min_value, max_value, value, key=key, persist_state=KEEP, **kwargs)
        return st.session_state.get(key, value)

    def checkbox(self, label: str, value: bool = False, *, key: str, **kwargs) -> bool:
        if self.open:
            return self.box.checkbox(label, value, key=key, persist_state=KEEP, **kwargs)
        return st.session_state.get(key, value)

    def toggle(self, label: str, value: bool = False, *, key: str, **kwargs) -> bool:
        if self.open:
            return self.box.toggle(label, value, key=key, persist_state=KEEP, **kwargs)
        return st.session_state.get(key, value)

    def selectbox(self, label: str, options: Sequence, index: int = 0, *, key: str, **kwargs):
        if self.open:
            return self.box.selectbox(label, options, index, key=key, persist_state=KEEP, **kwargs)
        return st.session_state.get(key, options[index])

    def caption(self, text: str) -> None:
        if self.open:
            self.box.caption(text)

    def columns(self, spec: int) -> list[Section]:
        return [Section(c) for c in self.box.columns(spec)] if self.open else [self] * spec


def folded(label: str, key: str):
    """An expander (its open state under `key`): its container while open, None while closed (draw nothing)."""
    box = st.expander(label, key=key, on_change="rerun")
    return box if box.open else None


def lazy_section(label: str, key: str) -> Section:
    """An expander (its open state under `key`) whose widgets run only while it is open."""
    return Section(folded(label, key))
