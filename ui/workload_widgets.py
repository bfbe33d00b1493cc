"""The sidebar's workload and SLO: the traffic (profile and lengths), the target rate and the latency targets.

One set of inputs for every page: the Latency, Techniques and Validation pages take their prompt and output
lengths from here (a custom profile's fixed lengths, or a trace profile's mean lengths), "Does it fit?" sizes a
request of prompt + output tokens, and Capacity & cost searches at this rate and SLO.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from planner.capacity.probe_workload import mean_request_tokens
from planner.core.errors import InputError
from planner.core.scenario import Scenario
from planner.core.specs import Deployment
from planner.core.workload import PROFILES, SLO, TrafficSpec
from ui.lazy_section import lazy_section
from ui.state import current_scenario

PROFILE_CHOICES = ["chat", "code", "rag", "custom"]
ARRIVALS = {"custom": ["poisson", "gamma", "constant"], "trace": ["poisson", "trace"]}
DEFAULT_PROMPT, DEFAULT_OUTPUT = 2000, 300  # the primer's request (§5)
# widget key -> (min, max), checked before a restore sets it
RANGES = {
    "sb_prompt": (1, 10_000_000),
    "sb_output": (1, 10_000_000),
    "sb_target": (0.01, 100_000.0),
    "sb_slo_ttft_ms": (10, 600_000),
    "sb_slo_tpot_ms": (1, 10_000),
    "sb_slo_e2e_s": (0.1, 3600.0),
    "sb_headroom": (1.0, 10.0),
    "sb_seed": (0, 2**31 - 1),
    "sb_num_requests": (100, 20_000),
    "sb_cv": (0.1, 10.0),
    "sb_prompt_pool": (0, 10_000_000),
}
PARAM_OF = {
    "sb_prompt": "in",
    "sb_output": "out",
    "sb_target": "rate",
    "sb_slo_ttft_ms": "ttft",
    "sb_slo_tpot_ms": "tpot",
    "sb_slo_e2e_s": "e2e",
    "sb_headroom": "headroom",
    "sb_seed": "seed",
    "sb_num_requests": "n",
    "sb_cv": "cv",
    "sb_prompt_pool": "pool",
}


@dataclass(frozen=True)
class Lengths:
    """The request every single-request page uses: a custom profile's fixed lengths or a trace's mean."""

    prompt_tokens: int
    output_tokens: int
    source: str  # how the lengths were chosen, for captions

    @property
    def context_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


def fixed_length(spec: str, param: str) -> int:
    """N of a "fixed:N" length SPEC (the sidebar edits fixed lengths only)."""
    kind, _, value = spec.partition(":")
    if kind != "fixed" or not value.isdigit():
        raise InputError(param, f"{spec!r}: the sidebar takes fixed lengths (fixed:N); use the CLI for distributions")
    return int(value)


def lengths_of(traffic: TrafficSpec) -> Lengths:
    """The one request length of the scenario (module note)."""
    if traffic.profile == "custom":
        try:
            return Lengths(fixed_length(traffic.prompt, "in"), fixed_length(traffic.output, "out"), "custom lengths")
        except InputError:
            pass  # a distribution: its sampled mean, below
    prompt, output = mean_request_tokens(traffic)
    return Lengths(prompt, output, f"mean of the {traffic.profile} profile's requests")


def widget_values(s: Scenario) -> dict:
    """The sidebar widget values that reproduce the scenario's workload and SLO (InputError when one has no widget)."""
    t, slo = s.traffic, s.slo
    if t.profile not in PROFILE_CHOICES:
        raise InputError("profile", f"must be one of {', '.join(PROFILE_CHOICES)} in the app")
    values = {
        "sb_profile": t.profile,
        "sb_target": float(s.target_rate),
        "sb_headroom": float(s.headroom),
        "sb_slo_ttft_ms": round(slo.ttft_p95_s * 1e3),
        "sb_slo_tpot_ms": round(slo.tpot_p95_s * 1e3),
        "sb_e2e_on": slo.e2e_p99_s is not None,
        "sb_seed": t.seed,
        "sb_num_requests": t.num_requests,
        "sb_arrival": t.arrival,
        "sb_cv": float(t.cv),
        "sb_prefix": s.deployment.enable_prefix_caching,  # the one switch: vLLM's --enable-prefix-caching
    }
    if slo.e2e_p99_s is not None:
        values["sb_slo_e2e_s"] = float(slo.e2e_p99_s)
    if t.profile == "custom":
        values["sb_prompt"], values["sb_output"] = fixed_length(t.prompt, "in"), fixed_length(t.output, "out")
        values["sb_prompt_pool"] = t.prompt_pool
    if t.arrival not in ARRIVALS["custom" if t.profile == "custom" else "trace"]:
        raise InputError("arrival", f"{t.arrival!r} does not apply to the {t.profile} profile")
    for key, (lo, hi) in RANGES.items():
        if key in values and not lo <= values[key] <= hi:
            raise InputError(PARAM_OF[key], f"must be between {lo:,} and {hi:,}")
    return values


def _profile_changed() -> None:
    st.session_state["sb_arrival"] = "poisson"


def render_workload() -> dict:
    """Draw the workload and SLO inputs; return the Scenario fields they set (traffic, slo, rate, headroom, ctx)."""
    st.subheader("Workload and SLO")
    profile = st.selectbox(
        "Traffic profile",
        PROFILE_CHOICES,
        key="sb_profile",
        on_change=_profile_changed,
        format_func=lambda p: PROFILES[p].label,
        help="Trace profiles take their lengths from the "
        "published traces; custom: every request has the lengths you set.",
    )
    if profile == "custom":
        c1, c2 = st.columns(2)
        prompt = c1.number_input("Prompt tokens", 1, 10_000_000, DEFAULT_PROMPT, step=100, key="sb_prompt")
        output = c2.number_input("Output tokens", 1, 10_000_000, DEFAULT_OUTPUT, step=50, key="sb_output")
        lengths = dict(prompt=f"fixed:{prompt}", output=f"fixed:{output}")
    else:
        lengths = {}
    c1, c2, c3 = st.columns(3)
    target = c1.number_input(
        "Target (req/s)",
        0.01,
        100_000.0,
        50.0,
        step=5.0,
        key="sb_target",
        help="Fleet traffic to serve, requests per second.",
    )
    ttft_ms = c2.number_input("p95 TTFT (ms)", 10, 600_000, 2000, step=100, key="sb_slo_ttft_ms")
    tpot_ms = c3.number_input("p95 TPOT (ms)", 1, 10_000, 100, step=5, key="sb_slo_tpot_ms")
    st.session_state.setdefault("sb_prefix", Deployment().enable_prefix_caching)
    box = lazy_section("Traffic details (headroom, arrivals, seed)", "sb_open_traffic")  # drawn while open
    headroom = box.number_input(
        "Headroom ×",
        1.0,
        10.0,
        1.2,
        step=0.1,
        key="sb_headroom",
        help="Provision target × headroom: spare for bursts and a replica down.",
    )
    e2e_on = box.toggle("p99 end-to-end target", key="sb_e2e_on")
    e2e_s = box.number_input("p99 end-to-end (s)", 0.1, 3600.0, 60.0, step=5.0, key="sb_slo_e2e_s", disabled=not e2e_on)
    arrivals = ARRIVALS["custom" if profile == "custom" else "trace"]
    if st.session_state.get("sb_arrival") not in arrivals:
        st.session_state["sb_arrival"] = "poisson"
    arrival = box.selectbox(
        "Arrivals", arrivals, key="sb_arrival", help="trace: the trace window's own timing, rescaled to the rate"
    )
    cv = box.number_input("Gamma arrivals: CV", 0.1, 10.0, 1.0, step=0.5, key="sb_cv", disabled=arrival != "gamma")
    prefix = box.checkbox(
        "Prefix caching",
        key="sb_prefix",
        help="vLLM's --enable-prefix-caching, on by default in vLLM V1 (the link's pfx): reuse cached prefix "
        "blocks (the rag trace shares 512-token prefixes; a preempted request re-hits its own blocks).",
    )
    pool = box.number_input(
        "Distinct prompts (custom profile; 0: every prompt new)",
        0,
        10_000_000,
        0,
        step=10,
        key="sb_prompt_pool",
        disabled=profile != "custom",
        help="Each request draws its prompt at random from this many, as aiperf's synthetic dataset does (100 "
        "unless --conversation-num says otherwise); with prefix caching on, a repeat still cached skips its blocks.",
    )
    c1, c2 = box.columns(2)
    seed = c1.number_input("Seed", 0, 2**31 - 1, 0, key="sb_seed")
    num_requests = c2.number_input("Requests per simulation", 100, 20_000, 1000, step=100, key="sb_num_requests")
    traffic = TrafficSpec(
        profile=profile,
        arrival=arrival,
        cv=cv,
        num_requests=num_requests,
        seed=seed,
        # the profile's own setting (the rag trace's shared prefixes), switched off with the box; the box itself is
        # the deployment's --enable-prefix-caching (ui.sidebar), which the simulation follows otherwise
        prefix_caching=PROFILES[profile].prefix_caching and prefix,
        prompt_pool=int(pool) if profile == "custom" else 0,
        **lengths,
    )
    slo = SLO(ttft_p95_s=ttft_ms / 1e3, tpot_p95_s=tpot_ms / 1e3, e2e_p99_s=e2e_s if e2e_on else None)
    req = lengths_of(traffic)
    if profile != "custom":
        st.caption(f"Requests: {req.prompt_tokens:,} prompt + {req.output_tokens:,} output tokens ({req.source}).")
    return dict(traffic=traffic, slo=slo, target_rate=target, headroom=headroom, context_tokens=req.context_tokens)


def scenario_lengths() -> Lengths:
    """The current scenario's request lengths (every page's one source)."""
    return lengths_of(current_scenario().traffic)
