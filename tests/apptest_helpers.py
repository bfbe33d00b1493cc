"""AppTest helpers shared by the page tests.

With st.navigation, AppTest keeps only the page's elements after the first run, so sidebar widgets are driven
through session_state by key (the frame still runs and reads them) and checked on the first run.
"""

from __future__ import annotations

from conftest import ROOT
from streamlit.testing.v1 import AppTest


def app(**sidebar_state) -> AppTest:
    """The whole app (frame + default page) after one run, with sidebar widgets preset by key."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    for key, value in sidebar_state.items():
        at.session_state[key] = value
    return at.run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}
