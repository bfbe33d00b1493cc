"""Run the current page as a fragment: its own widgets rerun the page alone, not the shared sidebar.

One Streamlit server process runs every session's script on one interpreter (one core's worth of Python), so a
rerun's CPU decides how many users one process holds. The sidebar (30-odd widgets and the scenario's validation)
was about a third of a page rerun; a page's own slider does not change the scenario, so it need not rerun it.
A sidebar change is outside the fragment and still reruns everything.

Only light pages run as a fragment. Streamlit does not let a fragment's own rerun request preempt a running
fragment (ScriptRequests: a fragment rerun that is not `st.rerun(scope="fragment")` waits for the run), so on a
page with long runs (the ranking, the rate sweep, the fleet and disaggregation searches) a click on Stop, or a
slider moved mid-run, would wait for the run to end; those pages rerun whole and a click preempts the run.
Pages whose widgets change what the sidebar reads (the Validation page's calibration) rerun whole too.
"""

from __future__ import annotations

import streamlit as st
from streamlit.navigation.page import StreamlitPage


def run_page(page: StreamlitPage, fragment_pages: set[str]) -> None:
    """`page.run()`, inside st.fragment when its url path is in `fragment_pages` (module note)."""
    if page.url_path not in fragment_pages:
        page.run()
        return

    def body() -> None:
        # StreamlitPage.run allows one call per script run (Streamlit 1.4x-1.6x: the `_can_be_called` flag); a
        # fragment rerun is a run of this body alone, so it re-arms the page it holds.
        page._can_be_called = True
        page.run()

    st.fragment(body)()
