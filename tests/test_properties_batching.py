"""Property tests (hypothesis) over the batching simulators (planner.batching.step_model, primer §6 step model).

For any requests, slots and policy: every request is served or rejected exactly once and produces all its
tokens (conservation of requests and tokens, per request and per step); no more than `slots` run at once; nobody
starts before arriving; admission is first-come first-served; p50 ≤ p95 ≤ p99; the event-driven run equals the
plain per-step loop; and for continuous batching one more slot never makes the last request finish later.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.batching.report import percentile, steps_frame, summarize
from planner.batching.requests import make_requests, parse_requests_csv, to_csv, with_spread
from planner.batching.step_model import (
    continuous_policy,
    dynamic_policy,
    run_batching,
    run_batching_stepwise,
    static_policy,
)

SETTINGS = settings(max_examples=150, deadline=None)


@st.composite
def request_sets(draw, max_size: int = 25):
    n = draw(st.integers(0, max_size))
    arrival = draw(st.lists(st.integers(0, 60), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    prompts = draw(st.lists(st.integers(0, 3000), min_size=n, max_size=n))
    return make_requests(arrival, outputs, prompts)


@st.composite
def policies(draw):
    kind = draw(st.sampled_from(["static", "continuous", "dynamic"]))
    if kind == "static":
        return static_policy(draw(st.integers(0, 30)))
    if kind == "continuous":
        return continuous_policy()
    return dynamic_policy(
        draw(st.integers(1, 12)),
        draw(st.integers(0, 30)),
        draw(st.none() | st.integers(0, 10)),
        draw(st.sampled_from([(), (128, 256, 512, 1024)])),
        hold_batch=draw(st.booleans()),
    )


def check_conservation(result) -> None:
    req = result.requests
    arrival, outputs = np.asarray(req.arrival, dtype=np.int64), np.asarray(req.output_tokens, dtype=np.int64)
    served = ~result.rejected
    assert ((result.admitted >= 0) == served).all(), "a request is both rejected and admitted, or neither"
    assert (result.admitted[served] >= arrival[served]).all(), "admitted before arriving"
    assert (result.finish[served] >= result.admitted[served] + outputs[served]).all(), "returned before its tokens"
    if not result.policy.hold_batch:
        assert (result.finish[served] == result.admitted[served] + outputs[served]).all()
    assert (result.finish[~result.rejected] >= 0).all() and (result.finish[result.rejected] == -1).all()
    assert ((result.slot[served] >= 0) & (result.slot[served] < result.slots)).all()
    # per step: the slot-steps recorded equal the tokens the served requests needed; never more than `slots`
    steps = steps_frame(result)
    assert int(((steps["end"] - steps["start"]) * steps["running"]).sum()) == int(outputs[served].sum())
    assert (steps["running"] <= result.slots).all() and (steps["running"] >= 0).all()
    assert result.end_step == (int(result.finish[served].max()) if served.any() else 0)
    # two requests never share a slot at the same step
    for s in range(result.slots):
        mine = np.flatnonzero(served & (result.slot == s))
        spans = sorted((int(result.admitted[r]), int(result.admitted[r] + outputs[r])) for r in mine)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), f"slot {s} double-booked: {spans}"


@SETTINGS
@given(request_sets(), st.integers(1, 8), policies())
def test_conservation_and_capacity(requests, slots, policy):
    result = run_batching(requests, slots, policy)
    check_conservation(result)
    if policy.queue_limit is None:
        assert not result.rejected.any()
    s = summarize(result)
    assert s.num_served + s.rejected == len(requests)
    assert s.useful_slot_steps == sum(n for n, r in zip(requests.output_tokens, result.rejected) if not r)
    assert 0.0 <= s.gpu_busy <= 1.0 + 1e-12
    assert s.p50_wait <= s.p95_wait <= s.p99_wait
    assert s.p50_latency <= s.p95_latency <= s.p99_latency


@SETTINGS
@given(request_sets(), st.integers(1, 8), policies())
def test_event_driven_equals_stepwise(requests, slots, policy):
    fast = run_batching(requests, slots, policy)
    slow, per_step = run_batching_stepwise(requests, slots, policy)
    for name in ("admitted", "finish", "slot", "rejected"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert fast.end_step == slow.end_step
    assert max(per_step, default=0) <= slots


@SETTINGS
@given(request_sets(), st.integers(1, 8), st.integers(1, 4))
def test_more_slots_never_end_later_continuous(requests, slots, extra):
    few = run_batching(requests, slots, continuous_policy())
    more = run_batching(requests, slots + extra, continuous_policy())
    assert more.end_step <= few.end_step
    assert (more.finish <= few.finish).all()  # and no single request returns later


@SETTINGS
@given(request_sets(), st.integers(1, 8))
def test_fcfs_admission_in_arrival_order(requests, slots):
    result = run_batching(requests, slots, continuous_policy())
    order = sorted(range(len(requests)), key=requests.arrival.__getitem__)  # ties: input order
    admitted = [int(result.admitted[r]) for r in order]
    assert admitted == sorted(admitted)


@SETTINGS
@given(request_sets(), st.integers(1, 8))
def test_continuous_is_never_slower_than_static_on_a_burst(requests, slots):
    burst = make_requests([0] * len(requests), requests.output_tokens)
    static = summarize(run_batching(burst, slots, static_policy(0)))
    cont = summarize(run_batching(burst, slots, continuous_policy()))
    assert cont.end_step <= static.end_step
    assert cont.avg_latency <= static.avg_latency + 1e-9


@SETTINGS
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=200))
def test_percentiles_are_ordered(values):
    p = [percentile(values, q) for q in (0, 50, 95, 99, 100)]
    assert p == sorted(p) and p[0] == min(values) and p[-1] == max(values)


@SETTINGS
@given(request_sets(), st.floats(0, 3))
def test_spread_keeps_count_and_positive_lengths(requests, spread):
    out = with_spread(requests, spread)
    assert len(out) == len(requests) and all(n >= 1 for n in out.output_tokens)
    assert out.arrival == requests.arrival and out.prompt_tokens == requests.prompt_tokens


@SETTINGS
@given(request_sets(max_size=15).filter(len))
def test_csv_round_trips(requests):
    back = parse_requests_csv(to_csv(requests))
    assert (back.arrival, back.output_tokens, back.prompt_tokens) == (
        requests.arrival,
        requests.output_tokens,
        requests.prompt_tokens,
    )
