"""AIPerf's profile_export_aiperf.json: detected by content, mapped onto a user point, scored through `simulate`."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from planner.accuracy.user_points import parse_upload
from planner.cli import main
from planner.core.errors import InputError

GHOST = ROOT / "tests" / "fixtures" / "aiperf" / "ghost_run_profile_export_aiperf.json"  # real: SOURCES.md


def _with(**extra) -> dict:
    """The real export plus what a profiled run also writes (sequence lengths, the load generator's setting)."""
    doc = json.loads(GHOST.read_text())
    doc.update(input_sequence_length={"avg": 1024, "unit": "tokens"}, output_sequence_length={"avg": 128})
    doc.update(extra)
    return doc


def test_the_real_export_is_told_by_its_content_and_names_what_it_lacks():
    # the documentation run's summary has TTFT and ITL but no sequence lengths: named, not guessed
    with pytest.raises(InputError, match=r"input_sequence_length\.avg: missing"):
        parse_upload("anything.json", GHOST.read_bytes())  # the name says nothing; the content does


def test_a_run_at_a_concurrency_is_n_closed_loop_users():
    data = parse_upload(
        "x",
        json.dumps(_with(input_config={"loadgen": {"concurrency": 32}, "models": {"items": [{"name": "mistral-7b"}]}})),
    )
    (p,) = data.points
    assert data.kind == "aiperf" and data.model_id == "mistral-7b"
    assert (p.users, p.request_rate, p.batch) == (32, None, 32)
    assert (p.input_tokens, p.output_tokens, p.ttft_ms, p.tpot_ms) == (1024, 128, 195.0, 31.0)  # the file's avg


def test_without_a_load_setting_the_batch_is_littles_law():
    # 55.5 req/s (request_throughput.avg) × 0.800 s (request_latency.avg) = 44.4 requests in flight
    doc = _with(request_latency={"avg": 800.0, "unit": "ms"})
    doc.pop("input_config")
    (p,) = parse_upload("x", json.dumps(doc)).points
    assert p.batch == pytest.approx(44.4) and p.users is None and p.request_rate is None


def test_seconds_are_converted_and_a_bad_unit_is_named():
    loadgen = {"loadgen": {"concurrency": 4}}
    (p,) = parse_upload(
        "x", json.dumps(_with(time_to_first_token={"avg": 0.2, "unit": "s"}, input_config=loadgen))
    ).points
    assert p.ttft_ms == pytest.approx(200.0)
    with pytest.raises(InputError, match=r"time_to_first_token\.unit: must be one of"):
        parse_upload("x", json.dumps(_with(time_to_first_token={"avg": 0.2, "unit": "fortnights"})))


@pytest.mark.parametrize(
    "change, field",
    [
        ({"input_config": [1]}, "input_config: must be an object"),
        ({"input_config": {"loadgen": {"concurrency": "many"}}}, "input_config.loadgen.concurrency: not a number"),
        ({"time_to_first_token": {"avg": float("nan")}}, "time_to_first_token.avg: must be finite"),
        ({"output_sequence_length": [128]}, "output_sequence_length: must be an object"),
        ({"inter_token_latency": {"avg": -3}}, "inter_token_latency.avg: must be positive"),
    ],
)
def test_hostile_exports_name_their_field(change, field):
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        parse_upload("x", json.dumps(_with(**change)))


@pytest.mark.parametrize("loadgen, flag", [({"concurrency": 8}, "users"), ({"request_rate": 2.0}, "rate")])
def test_validate_scores_an_aiperf_run_through_simulate(loadgen, flag, tmp_path, capsys):
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(_with(input_config={"loadgen": loadgen})))
    argv = ["validate", "--points", str(path), "--model", "mistralai/Mistral-7B-v0.1", "--gpu", "H100-SXM", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "aiperf" and (out["rows"], out["rows_predicted"]) == (1, 1)
    assert all(p["predicted"] > 0 for p in out["points"]), out["points"]
