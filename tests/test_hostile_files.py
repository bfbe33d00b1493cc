"""A hostile-file corpus: special files (FIFO, /dev/zero, /proc), huge or deep numbers, mixed time zones and
oversized cells for every reader a user can point at (trace, calibration upload, batching CSV, validate points,
config.json); each ends in one short line naming the file or field, never a traceback, a hang or a huge read."""

from __future__ import annotations

import json
import os

import pytest

from planner.accuracy.user_points import parse_upload
from planner.batching.requests import parse_requests_csv
from planner.cli import main
from planner.core.errors import InputError
from planner.core.user_files import read_user_text
from planner.traffic.traces import load_trace

MAX_LINE = 300


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return str(path)


def _cli_one_line(argv, capsys) -> str:
    try:
        rc = main(argv)
    except SystemExit as exit_:
        rc = exit_.code
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and len(err) < MAX_LINE, err
    return err


@pytest.mark.parametrize("special", ["FIFO", "/dev/zero", "/proc/self/mem", "/proc/self/status", "/dev/null"])
@pytest.mark.parametrize(
    "argv, flag",
    [
        (["batching", "--slots", "2", "--max-wait", "1", "--requests"], "--requests"),
        (["validate", "--points"], "--points"),
        (["simulate", "--trace"], "--trace"),
        (["memory", "--model"], "--model"),
    ],
)
def test_special_files_are_refused_without_reading(argv, flag, special, fifo, capsys):
    path = fifo if special == "FIFO" else special
    err = _cli_one_line([*argv, path], capsys)
    assert err.startswith(f"error: {flag}"), err


def test_read_user_text_caps_the_read(tmp_path):
    big = tmp_path / "big.csv"
    big.write_bytes(b"a,b\n" * 1000)
    with pytest.raises(InputError, match="4,000 bytes; at most 100"):
        read_user_text(big, "--requests", 100)


TRACES = {
    "mixed_tz.csv": "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:15:46.68+00:00,10,5\n2023-11-16 18:15:47.68+05:00,10,5\n2023-11-16 18:15:48,10,5\n",
    "digits.csv": "arrival_s,prompt_tokens,output_tokens\n0," + "9" * 5000 + ",5\n",
    "huge_tokens.csv": "arrival_s,prompt_tokens,output_tokens\n0,1e30,5\n",
    "huge_time.csv": "arrival_s,prompt_tokens,output_tokens\n1e300,10,5\n",
    "deep.jsonl": '{"a": ' + "[" * 100_000 + "\n",
    "huge_int.jsonl": '{"timestamp": 0, "input_length": ' + str(10**400) + ', "output_length": 5}\n',
    "digits.jsonl": '{"timestamp": 0, "input_length": ' + "9" * 5000 + ', "output_length": 5}\n',
    "inf.jsonl": '{"timestamp": 1e400, "input_length": 5, "output_length": 5}\n',
    "nan.jsonl": '{"timestamp": NaN, "input_length": 5, "output_length": 5}\n',
    "hash_overflow.jsonl": '{"timestamp": 0, "input_length": 5, "output_length": 5, "hash_ids": [' + "9" * 30 + "]}\n",
    "binary.csv": "\x00\x01\x02ELF",
}


@pytest.mark.parametrize("name", sorted(TRACES))
def test_hostile_traces_are_one_line(name, tmp_path):
    path = tmp_path / name
    path.write_text(TRACES[name])
    if name == "mixed_tz.csv":  # offsets are instants: read in UTC, in time order
        wl = load_trace(path)
        assert wl.num_requests == 3 and list(wl.arrival_s) == sorted(wl.arrival_s)
        return
    with pytest.raises(InputError) as err:
        load_trace(path)
    assert name in str(err.value) and len(str(err.value)) < MAX_LINE and "\n" not in str(err.value)


def test_hostile_trace_through_the_cli_names_the_row(tmp_path, capsys):
    path = tmp_path / "huge_tokens.csv"
    path.write_text(TRACES["huge_tokens.csv"])
    err = _cli_one_line(["simulate", "--trace", str(path)], capsys)
    assert "row 2, column prompt_tokens" in err


UPLOADS = {
    "deep.json": "[" * 100_000 + "]" * 100_000,
    "digits.json": '{"completed": ' + "9" * 5000 + "}",
    "huge.json": '{"completed": ' + str(10**400) + ', "mean_tpot_ms": 5}',
    "big_values.json": json.dumps({"completed": 1e300, "mean_tpot_ms": 1e300, "mean_ttft_ms": 1e300}),
    "string.json": '{"completed": "many"}',
    "guidellm_config.json": '{"benchmarks": [{"config": "x", "metrics": 5}]}',
    "field_limit.csv": "batch,input_tokens,output_tokens,tpot_ms\n" + "1" * 200_000 + ",1,1,1\n",
    "inf.csv": "batch,input_tokens,output_tokens,tpot_ms\n1,1,1,inf\n",
}


@pytest.mark.parametrize("name", sorted(UPLOADS))
def test_hostile_calibration_uploads_are_one_line(name):
    with pytest.raises(InputError) as err:
        parse_upload(name, UPLOADS[name])
    assert len(str(err.value)) < MAX_LINE and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text",
    ["name,arrival,output_tokens\n" + "a" * 200_000 + ",0,5\n", "name,arrival,output_tokens\nx,0," + "9" * 5000 + "\n"],
)
def test_hostile_batching_csv_is_one_line(text):
    with pytest.raises(InputError) as err:
        parse_requests_csv(text)
    assert len(str(err.value)) < MAX_LINE


def test_a_10000_character_model_argument_is_one_line(capsys):
    err = _cli_one_line(["memory", "--model", "m" * 10_000], capsys)
    assert err.startswith("error: --model: is 10,000 characters")


def test_a_calibration_upload_over_the_cap_is_refused_before_fitting():
    from planner.accuracy.profile_fit import MAX_FIT_POINTS, fit_user_profile
    from planner.core.scenario import Scenario, resolve
    from planner.latency.efficiency import choose_profile

    header = "batch,input_tokens,output_tokens,tpot_ms\n"
    rows = header + "".join(f"{1 + i % 64},{100 + i},50,12\n" for i in range(MAX_FIT_POINTS + 1))
    data = parse_upload("sweep.csv", rows)
    r = resolve(Scenario())
    refusal = f"has {MAX_FIT_POINTS + 1:,} points; the fit takes at most {MAX_FIT_POINTS:,}"
    with pytest.raises(InputError, match=refusal) as err:
        fit_user_profile(r, data, choose_profile("vllm", r.gpu.family).profile, "sweep.csv")
    assert err.value.field == "sweep.csv"
