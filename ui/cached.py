"""Expensive results cached across sessions, keyed by the scenario's JSON.

Streamlit's st.cache_data is shared by every session of the server process, so 20 users looking at the same
scenario compute each result once. Cached functions read only their arguments (a scenario as JSON text, plain
numbers) and return the engine's results (frozen dataclasses).
"""

from __future__ import annotations

import streamlit as st

from planner.capacity.capacity_plan import CapacityPlan, capacity_plan
from planner.capacity.cost import replica_scenario
from planner.core.scenario import Scenario, resolve, with_engine
from planner.report_plan import latency_ratios
from planner.sim.continuous import ContinuousEstimate, continuous
from planner.traffic.clients import DEFAULT_CLIENT


@st.cache_data(show_spinner=False, max_entries=512)
def continuous_cached(
    scenario_json: str,
    engine: str,
    concurrency: int,
    input_tokens: int,
    output_tokens: int,
    client: str = DEFAULT_CLIENT,
) -> ContinuousEstimate:
    """planner.sim.continuous.continuous for one scenario run by `engine` (a page's engine choice), its B streams
    those of benchmark `client` (planner.traffic.clients)."""
    r = with_engine(resolve(Scenario.model_validate_json(scenario_json)), engine)
    return continuous(r, concurrency, input_tokens, output_tokens, client)


@st.cache_data(show_spinner="Searching the capacity per replica…", max_entries=64)
def capacity_cached(scenario_json: str, prices: tuple[tuple[str, float], ...] = ()) -> CapacityPlan:
    """planner.capacity.capacity_plan.capacity_plan at the scenario's own target, traffic, SLO and headroom."""
    s = Scenario.model_validate_json(scenario_json)
    ratios = latency_ratios(resolve(replica_scenario(s)))  # replicas_pessimistic's latency-bound search
    return capacity_plan(s, s.target_rate, s.traffic, s.slo, s.headroom, dict(prices), latency_ratios=ratios)
