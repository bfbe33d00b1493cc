"""servingplan: the frame. Page config, the shared sidebar scenario, and navigation over pages/."""
import streamlit as st

from ui.sidebar import render_sidebar

st.set_page_config(page_title="servingplan: LLM serving capacity planner", page_icon="🧮", layout="wide")

render_sidebar()

PAGES = [
    st.Page("pages/fit.py", title="Does it fit?", icon=":material/memory:", default=True),
    st.Page("pages/latency.py", title="Latency & throughput", icon=":material/speed:"),
    st.Page("pages/batching.py", title="Batching", icon=":material/view_timeline:"),
]
st.navigation(PAGES).run()
