"""Run the current page as a fragment: its own widgets rerun the page alone, not the shared sidebar.

One Streamlit server process runs every session's script on one interpreter (one core's worth of Python), so a
rerun's CPU decides how many users one process holds. The sidebar (30-odd widgets and the scenario's validation)
was about a third of a page rerun; a page's own slider does not change the scenario, so it need not rerun it.
A sidebar change is outside the fragment and still reruns everything.
"""

from __future__ import annotations

import streamlit as st
from streamlit.navigation.page import StreamlitPage


def run_page(page: StreamlitPage, whole: set[str]) -> None:
    """`page.run()`, inside st.fragment unless its url path is in `whole` (pages whose widgets change what the
    sidebar reads, e.g. a calibration: those rerun the whole app)."""
    if page.url_path in whole:
        page.run()
        return

    def body() -> None:
        # StreamlitPage.run allows one call per script run (Streamlit 1.4x-1.6x: the `_can_be_called` flag); a
        # fragment rerun is a run of this body alone, so it re-arms the page it holds.
        page._can_be_called = True
        page.run()

    st.fragment(body)()
