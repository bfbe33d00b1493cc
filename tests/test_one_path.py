"""Every serving figure the product publishes goes through the command a user runs: `validate` and the accuracy
benchmarks predict a measured row by turning it into `simulate` flags (serving_points.simulate_flags) and running
them through planner.cli.simulate_cmd.simulate_result. Here every simulation a prediction starts is caught and its
call stack checked; the flags are checked to carry nothing a user could not type."""

from __future__ import annotations

import traceback

import pytest

import planner.sim.serving as serving
from planner.accuracy.serving_points import simulate_flags
from planner.cli.simulate_cmd import parse_simulate
from planner.cli.validate_cmd import predict_point
from validation.serving_traces import aiconfigurator_points, stratified_sample


def _rows(n: int = 6):
    rows = [p for p in stratified_sample(aiconfigurator_points(), 1, seed=3) if not p.excluded and p.ttft_ms]
    by_engine: dict = {}
    for p in rows:  # a few rows of each engine, each client
        by_engine.setdefault((p.engine, p.protocol.client if p.protocol else ""), []).append(p)
    return [p for group in by_engine.values() for p in group[:2]][:n]


@pytest.fixture
def simulations(monkeypatch):
    stacks: list[list[str]] = []
    real = serving.simulate

    def spy(*args, **kwargs):
        stacks.append([f"{f.filename}:{f.name}" for f in traceback.extract_stack()])
        return real(*args, **kwargs)

    monkeypatch.setattr(serving, "simulate", spy)
    return stacks


def test_a_rows_prediction_is_a_simulate_run_of_its_flags(simulations):
    rows = _rows()
    assert len(rows) >= 4
    for p in rows:
        before = len(simulations)
        try:
            predict_point(p)
        except Exception as err:  # a row the engine refuses is reported by validate, not predicted
            assert type(err).__name__ == "InputError", err
            continue
        new = simulations[before:]
        assert new, p.id  # it simulated
        for stack in new:
            assert any(s.endswith("planner/cli/simulate_cmd.py:simulate_result") for s in stack), stack[-6:]


def test_the_flags_are_only_what_a_user_types():
    # every flag parses with simulate's own parser, and none names the row's source, date or container image
    for p in _rows():
        flags = simulate_flags(p)
        args = parse_simulate(flags)
        assert args.users == p.concurrency or args.rate == p.request_rate
        text = " ".join(flags)
        for secret in (p.source, p.measured_on, p.id):
            assert not secret or secret not in text, (secret, text)
