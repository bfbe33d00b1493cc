"""A progress bar with a Stop button for the app's long runs (the deployment ranking, the rate sweep).

Streamlit ends a running script when the browser asks for another run, at the script's next element update
(fastReruns, on by default). A click on Stop is such a request: the run stops at its next progress update (each
finished candidate or rate), the exception that ends it also stops the ranking's worker processes
(planner/capacity/worker_pool.py stops its pool on any exception), and the button's callback leaves a flag the next
run shows once. Nothing partial is kept: the stored ranking or sweep is only replaced by a finished one.
"""

from __future__ import annotations

import streamlit as st


def _mark_stopped(flag: str) -> None:
    st.session_state[flag] = True


def progress_with_stop(text: str, key: str):
    """(a box holding the bar and a Stop button, the bar); `box.empty()` removes both when the run ends."""
    box = st.empty()
    with box.container():
        bar = st.progress(0.0, text=text)
        st.button(
            "Stop",
            key=key,
            icon=":material/stop_circle:",
            on_click=_mark_stopped,
            args=(f"{key}_stopped",),
            help="Stops the run at its next step; the last finished result stays.",
        )
    return box, bar


def show_if_stopped(key: str, what: str) -> None:
    """After a Stop click: say once that the run stopped (the flag the button's callback left)."""
    if st.session_state.pop(f"{key}_stopped", False):
        st.info(f"{what} stopped before it finished; press the button again to run it.")
