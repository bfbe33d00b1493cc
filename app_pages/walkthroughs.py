"""Walkthroughs: the primer's worked examples step by step, practice on fresh numbers, the one-GPU batching design."""

from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from planner.core.errors import InputError
from planner.core.safe_text import inline_markdown
from planner.teaching.from_scenario import LOADS, inputs_from_scenario
from planner.teaching.inputs import build_inputs, field_unit
from planner.teaching.practice import KINDS, check_answer, generate, parse_answer
from planner.teaching.steps import Step
from planner.teaching.walkthroughs import WALKTHROUGHS, run_walkthrough
from ui.labels import error_text
from ui.state import current_scenario

COLUMNS = 4  # input widgets per row


# -- widgets <-> inputs ------------------------------------------------------------------------------------------
def _key(name: str, field: str) -> str:
    return f"wt_{name}_{field}"


def _widget_value(value):
    """Session-state form of an input value: a tuple of token counts is edited as comma-separated text."""
    return ", ".join(map(str, value)) if isinstance(value, tuple) else value


def _set_inputs(name: str, inputs) -> None:
    for field, value in inputs.model_dump().items():
        st.session_state[_key(name, field)] = _widget_value(value)


def _reset(name: str) -> None:
    _set_inputs(name, WALKTHROUGHS[name].inputs())
    st.session_state.pop("wt_load_message", None)


def _load_scenario(name: str) -> None:
    """Button callback: fill the inputs from the sidebar scenario (before the widgets are drawn)."""
    try:
        current = build_inputs(WALKTHROUGHS[name].inputs, _values(name))
    except InputError:
        current = None
    try:
        _set_inputs(name, inputs_from_scenario(name, current_scenario(), current))
        st.session_state["wt_load_message"] = (name, f"Loaded from the sidebar scenario: {LOADS[name]}.")
    except InputError as err:
        st.session_state["wt_load_message"] = (name, f"Could not load the scenario: {error_text(err)}")


def _values(name: str) -> dict:
    return {f: st.session_state[_key(name, f)] for f in WALKTHROUGHS[name].inputs.model_fields}


def _input_widgets(name: str) -> dict:
    cls = WALKTHROUGHS[name].inputs
    if _key(name, next(iter(cls.model_fields))) not in st.session_state:
        _reset(name)
    cols = st.columns(COLUMNS)
    for k, (field, info) in enumerate(cls.model_fields.items()):
        unit = field_unit(cls, field)
        label = f"{info.title} ({unit})" if unit and unit.lower() not in info.title.lower() else info.title
        col, key = cols[k % COLUMNS], _key(name, field)
        if isinstance(st.session_state[key], str):
            col.text_input(label, key=key)
        elif info.annotation is int:
            col.number_input(label, min_value=0, step=1, key=key)
        else:
            col.number_input(label, min_value=0.0, key=key, format="%g")
    return _values(name)


# -- drawing steps -------------------------------------------------------------------------------------------
def show_steps(steps: list[Step]) -> None:
    for s in steps:
        with st.container(border=True):
            left, right = st.columns([3, 1])
            left.markdown(f"**{s.number}. {s.title}**  \n`{s.formula}`  \n= `{s.substituted}`")
            right.markdown(f"#### {s.result}")
            if s.note:
                left.caption(s.note)


def walkthrough_tab() -> None:
    name = st.radio(
        "Worked example",
        list(WALKTHROUGHS),
        horizontal=True,
        key="wt_name",
        format_func=lambda k: f"{WALKTHROUGHS[k].section} {WALKTHROUGHS[k].title}",
    )
    w = WALKTHROUGHS[name]
    st.caption(w.inputs.__doc__)
    buttons = st.container(horizontal=True)
    buttons.button(
        "Load the sidebar scenario",
        key="wt_load",
        on_click=_load_scenario,
        args=(name,),
        icon=":material/input:",
        help=f"Takes {LOADS[name]}.",
    )
    buttons.button("Reset to the primer", key="wt_reset", on_click=_reset, args=(name,), icon=":material/restart_alt:")
    message = st.session_state.get("wt_load_message")
    if message and message[0] == name:
        st.info(message[1])
    values = _input_widgets(name)
    try:
        inputs = build_inputs(w.inputs, values)
    except InputError as err:  # a walkthrough input: its field name, as the widget's title shows it
        st.error(inline_markdown(f"{err.field}: {err.message}"))
        return
    show_steps(run_walkthrough(name, inputs))


# -- practice ------------------------------------------------------------------------------------------------
def _question():
    kinds = tuple(st.session_state.get("wt_kinds") or KINDS)
    return generate(int(st.session_state.get("wt_seed", 1)), st.session_state.get("wt_q_index", 0), kinds)


def _check() -> None:
    q = _question()
    qid = (q.seed, q.index, q.kind, q.text)
    try:
        result = check_answer(q, parse_answer(st.session_state.get("wt_answer", ""), q.unit))
    except InputError as err:
        st.session_state["wt_result"] = (qid, err.message)
        return
    st.session_state["wt_result"] = (qid, result)
    answered = st.session_state.setdefault("wt_answered", {})
    if qid not in answered:  # the first attempt at a question counts
        answered[qid] = result.correct
        st.session_state["wt_score"] = (sum(answered.values()), len(answered))


def _next() -> None:
    st.session_state["wt_q_index"] = st.session_state.get("wt_q_index", 0) + 1
    st.session_state["wt_answer"] = ""
    st.session_state.pop("wt_result", None)


def practice_tab() -> None:
    c1, c2, c3 = st.columns([1, 3, 1])
    c1.number_input("Seed", min_value=0, value=1, step=1, key="wt_seed", help="The same seed gives the same questions.")
    c2.multiselect("Question kinds", list(KINDS), key="wt_kinds", placeholder="All kinds")
    correct, answered = st.session_state.get("wt_score", (0, 0))
    c3.metric("Score", f"{correct} / {answered}", help="First attempt at each question.")
    q = _question()
    st.markdown(f"**Question {q.index + 1}** ({q.kind}). {q.text}")
    st.caption(f"Answer in {q.unit}; checked {q.tolerance_text} of the exact value.")
    a1, a2, a3 = st.columns([3, 1, 1], vertical_alignment="bottom")
    a1.text_input("Your answer", key="wt_answer", placeholder=f"a number in {q.unit}")
    a2.button("Check", key="wt_check", on_click=_check, type="primary")
    a3.button("Next question", key="wt_next", on_click=_next)
    stored = st.session_state.get("wt_result")
    if not stored or stored[0] != (q.seed, q.index, q.kind, q.text):
        return
    result = stored[1]
    if isinstance(result, str):
        st.error(result)
        return
    exact = q.solution[-1].result
    if result.correct:
        st.success(f"Correct: {exact}.")
    else:
        st.error(f"Not quite: the answer is {exact} (yours is {result.relative_error:.1%} off).")
    st.markdown("**Worked solution**")
    show_steps(list(q.solution))


# -- the one-GPU batching design -----------------------------------------------------------------------------
DESIGN = """
**The question.** "Design an inference batching system for one GPU while users wait." A GPU runs many requests
in one forward pass for little extra time, so batching is where throughput comes from; memory (every running
request holds its KV cache) limits the batch first, latency (each extra request slows every step a little) second.

1. **Queue.** Requests enter a queue in arrival order; the scheduler is the only thing that feeds the GPU.
2. **Max batch size.** A batch fires as soon as this many requests wait. Its ceiling is memory: the KV pool holds
   only so many requests of your length (see *Does it fit?*).
3. **Max wait: the latency-throughput dial.** A partial batch fires once its oldest request has waited this long.
   A longer window fills bigger batches (more throughput) and makes every request wait longer (worse TTFT);
   zero means "run whatever is there".
4. **Bucketing by length.** Group requests of similar prompt length, so padding (filler that brings every prompt in
   a batch up to the longest) does not dominate the prefill work.
5. **Backpressure.** Once the queue is longer than the GPU can drain within the latency target, reject or delay new
   requests (HTTP 429, retry later) instead of letting every user's wait grow without bound.
6. **Continuous batching for generation.** Release each request the step it finishes and admit a waiting one into
   its slot at every decode step, instead of holding a batch until its longest member ends.
"""


def design_tab() -> None:
    st.markdown(DESIGN)
    steps = {s.number: s for s in run_walkthrough("six-requests")}
    st.markdown(
        f"**Why continuous batching (primer §6).** Six requests needing 2, 8, 4, 3, 5 and 2 tokens on 3 "
        f"slots: static batching is done at step {steps['2'].value:.0f} with the GPU "
        f"{steps['4'].result} busy; continuous batching at step {steps['3'].value:.0f}, "
        f"{steps['5'].result} busy, average wait {steps['7'].result} instead of {steps['6'].result}."
    )
    try:
        st.page_link(
            "app_pages/batching.py",
            label="Try it on the Batching page: max batch, max wait, buckets and queue limit on one simulator",
            icon=":material/view_timeline:",
        )
    except StreamlitPageNotFoundError:  # the page runs on its own (no navigation registered)
        st.markdown("Try it on the **Batching** page: max batch, max wait, buckets and queue limit on one simulator.")


st.title("Walkthroughs")
st.caption(
    "Every worked example of the primer, step by step: the formula, your numbers substituted, the result with "
    "its unit. The defaults reproduce the primer; change any input and the steps recompute."
)
tab_walk, tab_practice, tab_design = st.tabs(["Walkthroughs", "Practice", "Batching design"])
with tab_walk:
    walkthrough_tab()
with tab_practice:
    practice_tab()
with tab_design:
    design_tab()
