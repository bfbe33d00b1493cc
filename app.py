"""servingplan: the frame. Page config, the shared sidebar scenario, and navigation over app_pages/."""

import streamlit as st

from ui.page_fragment import run_page
from ui.report import render_report_downloads
from ui.sidebar import render_sidebar

st.set_page_config(page_title="servingplan: LLM serving capacity planner", page_icon="🧮", layout="wide")

PAGES = [
    st.Page("app_pages/fit.py", title="Does it fit?", icon=":material/memory:", default=True),
    st.Page("app_pages/latency.py", title="Latency & throughput", icon=":material/speed:"),
    st.Page("app_pages/batching.py", title="Batching", icon=":material/view_timeline:"),
    st.Page("app_pages/traffic.py", title="Traffic & load test", icon=":material/monitoring:"),
    st.Page("app_pages/fleet.py", title="Fleet & routing", icon=":material/hub:"),
    st.Page("app_pages/capacity.py", title="Capacity & cost", icon=":material/payments:"),
    st.Page("app_pages/disagg.py", title="Disaggregation & parallelism", icon=":material/call_split:"),
    st.Page("app_pages/techniques.py", title="Techniques", icon=":material/tune:"),
    st.Page("app_pages/validation.py", title="Validation", icon=":material/verified:"),
    st.Page("app_pages/walkthroughs.py", title="Walkthroughs", icon=":material/school:"),
]
# Light pages (cached results, no long runs) whose own widgets rerun the page alone, not the sidebar
# (ui/page_fragment.py says which pages must not).
FRAGMENT_PAGES = {"batching", "techniques", "walkthroughs"}
# st.navigation first: on a server's first run, widgets drawn before it get other ids than on later runs,
# which would drop the user's first sidebar change.
navigation = st.navigation(PAGES)
scenario = render_sidebar()
with st.sidebar:
    render_report_downloads(scenario)
run_page(navigation, FRAGMENT_PAGES)
