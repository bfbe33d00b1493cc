""" "Does it fit?" in one sentence, and the nearest changes that make it fit (planner.memory.fixes), each one click
from the scenario.

A deployment fits when vLLM would start (weights, activations and runtime leave a KV pool) and at least one request
of the scenario's length fits that pool. The nearest fixes change one thing, in the order a platform engineer
would try them: a max_model_len just above the requests (vLLM refuses to start when its pool holds less than one
max_model_len request), a smaller weight precision on the same GPUs, more GPUs per replica (TP), then a GPU with more
memory; for each kind, the first that fits (precisions by bits, TP upward, GPUs by memory then price).
"""

from __future__ import annotations

import streamlit as st

from planner.core.engine import engine_for
from planner.core.scenario import Scenario
from planner.memory.fixes import nearest_fixes, no_fix_advice
from ui.ranking import use_scenario

LIMIT_TEXT = {
    "max_num_seqs": "the scheduler's max_num_seqs binds before memory does",
    "kv_tokens": "the KV cache binds (tokens of the attention layers)",
    "state_slots": "the state slots bind (each request's fixed linear-attention / Mamba state, not its tokens)",
}


def fits_sentence(engine: str, requests: int, context_tokens: int, dp: int = 1) -> str:
    """How many requests fit, per replica = per DP rank × DP ranks (each rank has its own pool)."""
    if dp <= 1:
        return (
            f"**Fits.** {requests:,} requests of {context_tokens:,} tokens fit at once per replica in "
            f"{engine}'s KV pool"
        )
    return (
        f"**Fits.** {requests * dp:,} requests of {context_tokens:,} tokens fit at once per replica: {dp} DP ranks × "
        f"{requests:,} per rank, each rank in its own {engine} KV pool"
    )


def render_verdict(
    s: Scenario, requests: int, context_tokens: int, reason: str = "", limit: str = "", plan=None
) -> None:
    """The plain verdict (`requests` per DP rank), naming the limit that binds (planner.memory.layer_groups.
    binding_limit); when it does not fit, why (the memory plan's reason) and the nearest fixes, each with a "Use
    this" button, or advice that can work when there is none (planner.memory.fixes.no_fix_advice)."""
    if requests >= 1:
        dp = plan.data_parallel_size if plan is not None else 1
        st.success(
            fits_sentence(engine_for(s.engine).label, requests, context_tokens, dp)
            + (f"; {LIMIT_TEXT[limit]}." if limit in LIMIT_TEXT else "."),
            icon=":material/check_circle:",
        )
        return
    fixes = nearest_fixes(s)
    why = (
        reason.removeprefix("Does not fit: ").rstrip(".") or f"no request of {context_tokens:,} tokens fits the KV pool"
    )
    st.error(
        f"**Does not fit:** {why}."
        + (" Nearest fixes:" if fixes else f" No single change fits it: {no_fix_advice(plan) if plan else ''}."),
        icon=":material/block:",
    )
    for i, fix in enumerate(fixes):
        c = st.columns([3, 1], vertical_alignment="center")
        c[0].markdown(f"**{fix.kind}:** {fix.label} → {fix.requests:,} requests fit")
        if c[1].button("Use this", key=f"fit_use_{i}", type="primary" if i == 0 else "secondary"):
            use_scenario(fix.scenario, f"Loaded {fix.label} into the scenario")
