"""One bad candidate stops `recommend` with one line, not a broken process pool: InputError
pickles as itself, a worker's error reaches the parent, the CLI exits 2 and the Capacity page shows an error."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.capacity.recommend import run_tasks, tasks_for
from planner.cli import main
from planner.core.errors import InputError
from planner.core.scenario import Scenario
from planner.core.workload import TrafficSpec


def test_input_error_round_trips_through_pickle():
    original = InputError("--trace", "binary data, not a text trace")
    cls, args = original.__reduce__()  # what pickle stores and calls on the other side (the pool test pickles)
    err = cls(*args)
    assert type(err) is InputError and (err.field, err.message) == ("--trace", "binary data, not a text trace")
    assert str(err) == "--trace: binary data, not a text trace"


def test_a_workers_input_error_reaches_the_parent_as_itself(tmp_path):
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    traffic = TrafficSpec(profile="upload", trace_path=str(binary), num_requests=100)
    tasks = tasks_for(Scenario(), 1.0, traffic, gpu_ids=["H100-SXM"], tps=(1, 2))
    assert len(tasks) >= 2  # so the pool path runs, not the serial one
    with pytest.raises(InputError, match="binary data") as err:
        run_tasks(tasks, workers=2)
    assert err.value.field == str(binary)


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--trace", "BINARY"], "BINARY"),
        (["--max-num-seqs", "2147483648"], "--max-num-"),
        (["--target-rate", "5e-324"], "--target-rate"),
    ],
)
def test_recommend_with_a_bad_candidate_exits_2_with_one_line(flags, field, tmp_path, capsys):
    binary = tmp_path / "binary.csv"
    binary.write_bytes(sys.executable.encode() + b"\x00" * 64)
    flags = [str(binary) if f == "BINARY" else f for f in flags]
    field = str(binary) if field == "BINARY" else field
    rate = [] if "--target-rate" in flags else ["--target-rate", "5"]
    argv = ["recommend", "--gpus", "H100-SXM", "--tps", "1,2", "--workers", "2", "--num-requests", "100"]
    try:
        rc = main(argv + rate + flags)
    except SystemExit as exit_:  # refused by the flag's own parser (planner/cli/numbers.py), before any work
        rc = exit_.code
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and field in err.split(":")[1], err
    assert "Traceback" not in err and "BrokenProcessPool" not in err


def test_capacity_page_ranking_shows_a_workers_error(monkeypatch):
    import planner.capacity.recommend as rec

    def failing(*args, **kwargs):  # what recommend raises when one candidate's worker raised
        raise InputError("max_num_seqs", "must be at most 1,000,000")

    at = AppTest.from_file(str(ROOT / "app_pages" / "capacity.py"), default_timeout=120).run()
    monkeypatch.setattr(rec, "recommend", failing)
    at.button(key="cap_rank").click().run()
    assert not at.exception, at.exception
    assert any(e.value.startswith("Cannot rank:") and "max_num_seqs" in e.value for e in at.error)
    assert "cap_ranking" not in at.session_state
