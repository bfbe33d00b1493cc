"""The shared scenario in Streamlit's session state: the sidebar (app.py) writes it, every page reads it."""
from __future__ import annotations

import streamlit as st

from planner.scenario import Resolved, Scenario, resolve

SCENARIO_KEY = "scenario"


def current_scenario() -> Scenario:
    """The scenario the sidebar last validated, or the built-in default when a page runs on its own."""
    scenario = st.session_state.get(SCENARIO_KEY)
    return scenario if isinstance(scenario, Scenario) else Scenario()


def set_scenario(scenario: Scenario) -> None:
    st.session_state[SCENARIO_KEY] = scenario


def current_resolved() -> Resolved:
    """The current scenario with its specs looked up (ids were validated by the sidebar)."""
    return resolve(current_scenario())
