"""Batching simulator: hand-counted timelines, the primer §6 numbers, scenarios, and event-driven = per-step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.batching.report import percentile, requests_frame, spread_sweep, steps_frame, summarize
from planner.batching.requests import (
    OUTPUT_LENGTHS,
    burst,
    make_requests,
    parse_requests_csv,
    primer_six,
    steady,
    to_csv,
    with_spread,
)
from planner.batching.step_model import (
    BatchingPolicy,
    bucketing_pair,
    continuous_policy,
    dynamic_policy,
    run_batching,
    run_batching_stepwise,
    run_pair,
    static_policy,
)
from planner.core.errors import InputError


def times(result, column):
    return requests_frame(result)[column].tolist()


# --- primer §6: six requests at step 0 needing 2, 8, 4, 3, 5, 2 tokens on 3 slots --------------------------------


def test_primer_six_static():
    r = run_batching(primer_six(), 3, static_policy(max_wait=0))
    # batch 1 = A(2) B(8) C(4) at step 0, held until the longest (B) ends at 0 + 8 = 8
    # batch 2 = D(3) E(5) F(2) at step 8, held until E ends at 8 + 5 = 13
    assert times(r, "admitted") == [0, 0, 0, 8, 8, 8]
    assert times(r, "finish") == [8, 8, 8, 13, 13, 13]
    s = summarize(r)
    assert s.end_step == 13
    # useful slot-steps = 2+8+4+3+5+2 = 24; capacity = 3 slots × 13 steps = 39; 24/39 = 61.5%
    assert s.useful_slot_steps == 24
    assert s.gpu_busy == pytest.approx(24 / 39)
    assert f"{s.gpu_busy:.1%}" == "61.5%"
    # waits 0+0+0+8+8+8 = 24 over 6 requests = 4.0
    assert s.avg_wait == 4.0
    # latencies 8,8,8,13,13,13: mean 63/6 = 10.5
    assert s.avg_latency == 10.5


def test_primer_six_continuous():
    r = run_batching(primer_six(), 3, continuous_policy())
    # step 0: A B C admitted (slots 0 1 2). A ends at 2 -> D in at 2 (ends 5). C ends at 4 -> E in at 4 (ends 9).
    # D ends at 5 -> F in at 5 (ends 7). B ends at 8. Last finish: E at 9.
    assert times(r, "admitted") == [0, 0, 0, 2, 4, 5]
    assert times(r, "finish") == [2, 8, 4, 5, 9, 7]
    assert times(r, "first_token") == [1, 1, 1, 3, 5, 6]
    s = summarize(r)
    assert s.end_step == 9
    # 24 useful slot-steps / (3 × 9 = 27) = 88.9%
    assert s.gpu_busy == pytest.approx(24 / 27)
    assert f"{s.gpu_busy:.1%}" == "88.9%"
    # waits 0+0+0+2+4+5 = 11 -> 11/6 = 1.83
    assert s.avg_wait == pytest.approx(11 / 6)
    # latencies 2,8,4,5,9,7 sorted 2,4,5,7,8,9: p50 = (5+7)/2 = 6; p95 rank 0.95×5 = 4.75 -> 8 + 0.75 = 8.75
    assert s.p50_latency == 6.0
    assert s.p95_latency == pytest.approx(8.75)


def test_primer_six_per_step_segments():
    static, cont = run_pair(primer_six(), 3, 0).values()
    # static: 3 run until A ends (2), 2 until C ends (4), B alone to 8 (2 slots held idle); then D E F ...
    assert steps_frame(static)[["start", "end", "running", "idle"]].values.tolist() == [
        [0, 2, 3, 0],
        [2, 4, 2, 1],
        [4, 8, 1, 2],
        [8, 10, 3, 0],
        [10, 11, 2, 1],
        [11, 13, 1, 2],
    ]
    # continuous keeps 3 busy until F ends at 7, then B to 8, then E alone to 9
    assert steps_frame(cont)[["start", "end", "running"]].values.tolist() == [[0, 7, 3], [7, 8, 2], [8, 9, 1]]


# --- hand-counted policies ---------------------------------------------------------------------------------------


def test_static_fires_on_full_batch_or_max_wait():
    # 2 slots, max wait 3. A@0 needs 2, B@1 needs 4, C@4 needs 1.
    reqs = make_requests([0, 1, 4], [2, 4, 1], names="ABC")
    r = run_batching(reqs, 2, static_policy(max_wait=3))
    # step 1: A and B wait = 2 slots -> fire; held until B ends at 1+4 = 5.
    # step 5: C alone, has waited 1 < 3 -> the window expires at 4+3 = 7; C ends at 8.
    assert times(r, "admitted") == [1, 1, 7]
    assert times(r, "finish") == [5, 5, 8]
    # busy = (2+4+1) / (2 slots × 8 steps) = 7/16
    assert summarize(r).gpu_busy == pytest.approx(7 / 16)


def test_idle_gap_between_arrivals():
    reqs = make_requests([0, 10], [2, 1])
    r = run_batching(reqs, 1, continuous_policy())
    assert steps_frame(r)[["start", "end", "running"]].values.tolist() == [[0, 2, 1], [2, 10, 0], [10, 11, 1]]
    assert summarize(r).gpu_busy == pytest.approx(3 / 11)


def test_admission_in_arrival_order_ties_in_input_order():
    reqs = make_requests([3, 0, 0], [1, 1, 1], names="XYZ")
    r = run_batching(reqs, 1, continuous_policy())
    # Y (input 1) and Z (input 2) tie at 0: Y first at 0, Z at 1; X arrives at 3
    assert times(r, "admitted") == [3, 0, 1]


def test_queue_limit_rejects_newest_arrivals():
    # 1 slot, queue limit 1, four requests at step 0 needing 2: A runs, B waits, C and D are rejected
    reqs = make_requests([0] * 4, [2] * 4, names="ABCD")
    r = run_batching(reqs, 1, dynamic_policy(max_batch=1, max_wait=0, queue_limit=1))
    assert r.rejected.tolist() == [False, False, True, True]
    assert times(r, "admitted")[:2] == [0, 2]
    s = summarize(r)
    assert (s.rejected, s.num_served, s.end_step) == (2, 2, 4)


def test_queue_limit_does_not_reject_requests_admitted_the_same_step():
    r = run_batching(make_requests([0, 0], [1, 1]), 2, dynamic_policy(max_batch=2, max_wait=0, queue_limit=0))
    assert not r.rejected.any()


def test_dynamic_max_wait_holds_partial_batches():
    # 4 slots, max batch 4, max wait 5: two requests at 0 and 1 fire together when the oldest has waited 5
    r = run_batching(make_requests([0, 1], [10, 10]), 4, dynamic_policy(max_batch=4, max_wait=5))
    assert times(r, "admitted") == [5, 5]
    assert r.num_batches == 1


def test_bucketing_removes_padding():
    # prompts 100, 1000, 100, 1000 at step 0; one queue pads all four to 1000: (900 + 900) / 4000 = 45%
    reqs = make_requests([0] * 4, [5] * 4, prompt_tokens=[100, 1000, 100, 1000])
    runs = bucketing_pair(reqs, 4, dynamic_policy(max_batch=4, max_wait=0))
    one, bucketed = summarize(runs["one queue"]), summarize(runs["bucketed"])
    assert (one.padding_tokens, one.padding_share, one.num_batches) == (1800, 0.45, 1)
    # buckets (128, 256, 512, 1024): 100 -> bucket 0, 1000 -> bucket 3: two groups, no filler
    assert (bucketed.padding_tokens, bucketed.num_batches) == (0, 2)


def test_ample_slots_means_no_wait():
    # theory check: with a slot per request, wait is 0 and latency is the output length
    reqs = make_requests([0, 3, 3, 7], [5, 2, 9, 1])
    r = run_batching(reqs, 4, continuous_policy())
    assert times(r, "wait") == [0, 0, 0, 0]
    assert times(r, "latency") == [5, 2, 9, 1]


def test_bad_configuration():
    with pytest.raises(InputError, match="slots"):
        run_batching(primer_six(), 0, continuous_policy())
    with pytest.raises(InputError, match="max_wait"):
        static_policy(-1)


# --- event-driven run = plain per-step loop ---------------------------------------------------------------------

request_sets = st.lists(
    st.tuples(st.integers(0, 30), st.integers(1, 12), st.integers(0, 1500)), min_size=1, max_size=25
)
policies = st.builds(
    BatchingPolicy,
    name=st.just("p"),
    hold_batch=st.booleans(),
    max_wait=st.integers(0, 8),
    max_batch=st.none() | st.integers(1, 4),
    queue_limit=st.none() | st.integers(0, 5),
    bucket_edges=st.sampled_from([(), (128, 256, 512, 1024)]),
)


@settings(max_examples=150, deadline=None)
@given(request_sets, policies, st.integers(1, 4))
def test_event_driven_matches_per_step(rows, policy, slots):
    reqs = make_requests(*zip(*rows))
    fast = run_batching(reqs, slots, policy)
    slow, running_per_step = run_batching_stepwise(reqs, slots, policy)
    for field in ("admitted", "finish", "rejected"):
        assert getattr(fast, field).tolist() == getattr(slow, field).tolist()
    assert fast.end_step == slow.end_step
    # the run-length segments expand to exactly the per-step records, and their area is the useful work
    seg = steps_frame(fast)
    expanded = np.repeat(seg["running"].to_numpy(), (seg["end"] - seg["start"]).to_numpy())
    assert expanded.tolist() == running_per_step[: fast.end_step]
    assert int(expanded.sum()) == summarize(fast).useful_slot_steps
    assert (seg["running"] <= slots).all()


# --- scenarios, spread, percentiles, CSV -----------------------------------------------------------------------


def test_scenarios_are_seeded_and_shaped():
    b, s = burst(seed=0), steady(seed=0)
    assert len(b) == len(s) == 200
    assert set(b.arrival) == {0}
    assert set(b.output_tokens) <= set(OUTPUT_LENGTHS) and set(s.output_tokens) <= set(OUTPUT_LENGTHS)
    gaps = np.diff(s.arrival)
    assert s.arrival[0] == 0 and gaps.min() >= 10 and gaps.max() <= 50
    assert burst(seed=0) == b and burst(seed=1) != b


@pytest.mark.parametrize("reqs,max_wait", [(burst(seed=0), 0), (steady(seed=0), 20)])
def test_continuous_beats_static_on_scenarios(reqs, max_wait):
    static, cont = (summarize(r) for r in run_pair(reqs, 8, max_wait).values())
    assert cont.end_step < static.end_step
    assert cont.gpu_busy > static.gpu_busy
    assert cont.avg_wait < static.avg_wait and cont.p95_latency < static.p95_latency


def test_burst_seed0_pinned():
    # regression pins for the built-in burst (seed 0, 8 slots)
    static, cont = (summarize(r) for r in run_pair(burst(seed=0), 8, 0).values())
    assert (static.end_step, cont.end_step) == (9520, 4120)
    # continuous can't beat the work bound: total tokens / 8 slots
    assert cont.end_step >= sum(burst(seed=0).output_tokens) / 8


def test_zero_spread_closes_the_gap():
    # all lengths equal: every static batch ends together, so static = continuous
    reqs = with_spread(burst(seed=0), 0.0)
    assert len(set(reqs.output_tokens)) == 1
    static, cont = (summarize(r) for r in run_pair(reqs, 8, 0).values())
    assert static.end_step == cont.end_step and static.avg_latency == cont.avg_latency
    sweep = spread_sweep(burst(seed=0), 8, 0, spreads=(0.0, 0.5, 1.0))
    gap = sweep.pivot(index="spread", columns="policy", values="avg_latency")
    widening = (gap["static"] - gap["continuous"]).tolist()
    assert widening[0] == 0 and widening[0] < widening[1] < widening[2]


def test_percentile_convention_is_numpy_linear():
    # rank (4 − 1) × 0.95 = 2.85 -> 3 + 0.85 × (4 − 3) = 3.85
    assert percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)
    assert percentile([], 50) == 0.0


def test_csv_round_trip_and_optional_prompt():
    reqs = parse_requests_csv("name,arrival,output_tokens\nA,0,2\nB,3,8\n")
    assert (reqs.names, reqs.arrival, reqs.output_tokens, reqs.prompt_tokens) == (["A", "B"], [0, 3], [2, 8], [0, 0])
    assert parse_requests_csv(to_csv(burst(seed=2))) == burst(seed=2)


@pytest.mark.parametrize(
    "text,where",
    [
        ("name,arrival\nA,0\n", "column output_tokens"),
        ("name,arrival,output_tokens\nA,0,2\nB,soon,3\n", "row 2, column arrival"),
        ("name,arrival,output_tokens\nA,-1,2\n", "row 1, column arrival"),
        ("name,arrival,output_tokens\nA,0,0\n", "row 1, column output_tokens"),
        ("name,arrival,output_tokens,prompt_tokens\nA,0,2,x\n", "row 1, column prompt_tokens"),
        ("name,arrival,output_tokens\nA,0\n", "row 1"),
        ("name,arrival,output_tokens\n", "row 1"),
    ],
)
def test_csv_errors_name_row_and_column(text, where):
    with pytest.raises(InputError, match=where):
        parse_requests_csv(text)


def test_100k_requests_both_policies_compact():
    reqs = steady(100_000, seed=1)
    results = run_pair(reqs, 8, 20)  # its speed: benchmarks/bench_batching.py
    for r in results.values():
        assert r.seg_start.size <= 2 * len(reqs) + 2  # per-step records are segments, not one per step
        assert r.end_step > 1_000_000
