"""The shared scenario in Streamlit's session state: the sidebar (app.py) writes it, every page reads it."""

from __future__ import annotations

import streamlit as st

from planner.core.errors import InputError
from planner.core.scenario import Calibration, Resolved, Scenario, resolve
from planner.latency.calibration import fitted_profile
from ui.labels import error_text

SCENARIO_KEY = "scenario"
# The Validation page stores the user's fitted constants here; the sidebar puts them into the scenario.
PROFILE_KEY, TARGET_KEY = "calibration_profile", "calibration_target"


def current_scenario() -> Scenario:
    """The scenario the sidebar last validated, or the built-in default when a page runs on its own."""
    scenario = st.session_state.get(SCENARIO_KEY)
    return scenario if isinstance(scenario, Scenario) else Scenario()


def set_scenario(scenario: Scenario) -> None:
    st.session_state[SCENARIO_KEY] = scenario


def current_resolved() -> Resolved:
    """The current scenario with its specs looked up (ids were validated by the sidebar)."""
    return resolve(current_scenario())


def resolved_or_stop() -> Resolved:
    """The page guard: the resolved scenario, or an error naming the field and the end of this page's run."""
    try:
        return current_resolved()
    except InputError as err:
        st.error(error_text(err))
        st.stop()


def calibration_from_state() -> Calibration | None:
    """The user's calibration (fitted on the Validation page), if any."""
    profile, target = st.session_state.get(PROFILE_KEY), st.session_state.get(TARGET_KEY)
    if profile is None or not target:
        return None
    return Calibration(
        engine=target["engine"],
        gpu_family=target["gpu_family"],
        profile=profile,
        source=target.get("source", "your benchmark results"),
    )


def calibration_to_state(calibration: Calibration | None) -> None:
    """Restore a saved scenario's calibration (or clear it)."""
    if calibration is None:
        st.session_state.pop(PROFILE_KEY, None)
        st.session_state.pop(TARGET_KEY, None)
    else:
        st.session_state[PROFILE_KEY] = fitted_profile(calibration)
        st.session_state[TARGET_KEY] = {
            "engine": calibration.engine,
            "gpu_family": calibration.gpu_family,
            "source": calibration.source,
        }
