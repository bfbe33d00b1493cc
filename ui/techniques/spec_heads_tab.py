"""Techniques page, speculative decoding tab: a draft head inside the target (EAGLE-3, MTP) priced with an acceptance
length from a named source (a published row for this model, or the user's own measured value; none: say so)."""

from __future__ import annotations

import streamlit as st

from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.sim.spec_heads import spec_methods
from planner.techniques.spec_methods import USER_SOURCE, Acceptance, published_for, spec_on_scenario
from ui.labels import error_text
from ui.techniques.data import Request

OWN = "My own measured acceptance length"


def _acceptance(method: str, model: str) -> Acceptance | None:
    """The source the user picks: a published row for this model, or their own value (None until entered)."""
    rows = published_for(method, model)
    labels = {f"{row.acceptance_length:g} tokens/pass · {row.task} ({row.source})": row for row in rows}
    choice = st.selectbox(
        "Acceptance length from",
        [*labels, OWN],
        key=f"tech_head_source_{method}",
        help="tokens per verification pass (1 + accepted drafts), as EAGLE papers and vLLM's spec-decode metrics "
        "report it; published rows: data/spec_methods.yaml",
    )
    if choice != OWN:
        row = labels[choice]
        return Acceptance(row.acceptance_length, row.k, f"{row.source} ({row.model}, {row.task})", row.task)
    if not rows:
        st.info(f"No published {method} acceptance length for {model}: enter the one you measured. Nothing is assumed.")
    value = st.number_input("Your acceptance length (tokens per pass)", 1.0, 33.0, None, 0.01, key="tech_head_al")
    return None if value is None else Acceptance(float(value), None, USER_SOURCE)


def spec_head_section(r: Resolved, q: Request) -> None:
    st.subheader("A draft head inside the target: EAGLE-3 or MTP, as engines deploy it")
    methods = spec_methods()
    c = st.columns(3)
    with c[0]:
        method = st.selectbox("Method", list(methods), format_func=lambda m: methods[m].name, key="tech_head_method")
    with c[1]:
        acc = _acceptance(method, r.model.name)
    if acc is None:
        return
    k_default = acc.k or 1
    k = c[2].number_input(
        "Draft tokens k",
        1,
        10,
        k_default,
        key=f"tech_head_k_{method}_{acc.task}",
        help="the source's k where it states one; else yours" + ("" if acc.k else " (the source does not state k)"),
    )
    if acc.acceptance_length > k + 1:
        st.error(f"An acceptance length of {acc.acceptance_length:g} needs k ≥ {acc.acceptance_length - 1:g}.")
        return
    try:
        est, s = spec_on_scenario(r, q.batch, q.prompt, q.output, method, int(k), acc)
    except InputError as err:  # e.g. a batch above the memory limit
        st.warning(error_text(err))
        return
    m = st.columns(4)
    m[0].metric("Acceptance length", f"{s.acceptance_length:g}", help=f"Source: {s.acceptance_source}")
    m[1].metric(f"Priced speed-up at batch {est.batch}", f"{s.speedup:.3f}×", help="decode step / (pass / L)")
    m[2].metric(
        "TPOT with the head",
        f"{s.tpot_s * 1e3:,.2f} ms",
        delta=f"{est.tpot_s * 1e3:,.2f} ms without",
        delta_color="off",
        delta_arrow="off",
    )
    m[3].metric(
        "Memory-bound hand formula",
        f"{s.speedup_memory_bound:.3f}×",
        help=f"L / (1 + k × {s.head_fraction:.4f}): one head pass = {methods[method].draft_layers} of "
        f"{r.model.num_layers} layers",
    )
    st.caption(
        f"Acceptance: **{s.acceptance_source}**. One step = verify over 1 + k tokens "
        f"({s.verify_step_s * 1e3:,.2f} ms) + {s.k} head passes ({s.head_pass_s * 1e3:,.3f} ms each, the share of "
        f"the target's layers without its step overhead) for {s.acceptance_length:g} tokens per sequence; plain decode "
        f"{s.decode_step_s * 1e3:,.2f} ms per token. {methods[method].engines}. Method source: "
        f"{methods[method].source}."
    )
