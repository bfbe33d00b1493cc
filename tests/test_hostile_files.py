"""A hostile-file corpus: special files (FIFO, /dev/zero, /proc), huge or deep numbers, mixed time zones and
oversized cells for every reader a user can point at (trace, calibration upload, batching CSV, validate points,
config.json); each ends in one short line naming the file or field, never a traceback, a hang or a huge read."""

from __future__ import annotations

import json
import os
import re

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


SERVING = {"completed": 10, "total_input_tokens": 1000, "total_output_tokens": 500, "mean_ttft_ms": 40.0,
           "mean_tpot_ms": 10.0, "request_rate": 4, "request_throughput": 3.9}  # fmt: skip
_STAT = {"successful": {"mean": 10.0}}
GUIDELLM = {"metrics": {k: _STAT for k in ("time_to_first_token_ms", "inter_token_latency_ms", "prompt_token_count",
                                           "output_token_count", "request_concurrency")}}  # fmt: skip
UPLOADS = {
    "deep.json": "[" * 100_000 + "]" * 100_000,
    "digits.json": '{"completed": ' + "9" * 5000 + "}",
    "huge.json": '{"completed": ' + str(10**400) + ', "mean_tpot_ms": 5}',
    "big_values.json": json.dumps({"completed": 1e300, "mean_tpot_ms": 1e300, "mean_ttft_ms": 1e300}),
    "string.json": '{"completed": "many"}',
    "guidellm_config.json": '{"benchmarks": [{"config": "x", "metrics": 5}]}',
    "field_limit.csv": "batch,input_tokens,output_tokens,tpot_ms\n" + "1" * 200_000 + ",1,1,1\n",
    "inf.csv": "batch,input_tokens,output_tokens,tpot_ms\n1,1,1,inf\n",
    # issue 57: each of these ended in a traceback (TypeError / AttributeError) before
    "e2el_string.json": json.dumps({**SERVING, "mean_e2el_ms": "abc"}),
    "guidellm_config_list.json": json.dumps({"benchmarks": [{**GUIDELLM, "config": [1, 2]}]}),
    "guidellm_strategy_string.json": json.dumps({"benchmarks": [{**GUIDELLM, "config": {"strategy": "poisson"}}]}),
    "guidellm_rate_nan.json": json.dumps({"benchmarks": [{**GUIDELLM, "config": {"strategy": {"rate": "NaN"}}}]}),
    "nested_list.json": json.dumps({**SERVING, "mean_ttft_ms": [[5.0]]}),
    "max_concurrency_string.json": json.dumps({**SERVING, "max_concurrency": "sixteen"}),
    "negative.json": json.dumps({**SERVING, "mean_tpot_ms": -5}),
    "nan_literal.json": json.dumps(SERVING)[:-1] + ', "mean_e2el_ms": NaN}',
    "huge_float.json": json.dumps(SERVING)[:-1] + ', "mean_e2el_ms": 1e999}',
    "bom_garbage.csv": "\ufeffbatch,input_tokens,output_tokens,tpot_ms\n1,1,1,\x00\n",
    "wrong_type_rows.json": json.dumps([SERVING, "not a result"]),
}


@pytest.mark.parametrize("name", sorted(UPLOADS))
def test_hostile_calibration_uploads_are_one_line(name):
    with pytest.raises(InputError) as err:
        parse_upload(name, UPLOADS[name])
    assert len(str(err.value)) < MAX_LINE and "\n" not in str(err.value)


NAMED = {  # the field each hostile upload's error names
    "e2el_string.json": "result.mean_e2el_ms: not a number: 'abc'",
    "guidellm_config_list.json": "benchmarks[0].config: must be an object, got list",
    "guidellm_strategy_string.json": "benchmarks[0].config.strategy: must be an object, got str",
    "guidellm_rate_nan.json": "benchmarks[0].config.strategy.rate: must be finite",
    "nested_list.json": "result.mean_ttft_ms: not a number",
    "max_concurrency_string.json": "result.max_concurrency: not a number",
    "negative.json": "result.mean_tpot_ms: must be positive",
    "nan_literal.json": "result.mean_e2el_ms: must be finite",
    "huge_float.json": "result.mean_e2el_ms: must be finite",
    "bom_garbage.csv": "row 2, column tpot_ms",
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_hostile_uploads_name_their_field(name):
    with pytest.raises(InputError, match=re.escape(NAMED[name])):
        parse_upload(name, UPLOADS[name])


@pytest.mark.parametrize("name", sorted(set(NAMED) - {"bom_garbage.csv"}))
def test_hostile_result_files_through_validate_are_one_line(name, tmp_path, capsys):
    path = tmp_path / name
    path.write_text(UPLOADS[name])
    err = _cli_one_line(["validate", "--points", str(path), "--gpu", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B"],
                        capsys)  # fmt: skip
    assert NAMED[name].split(":")[0] in err, err


def test_a_200000_character_cell_in_validates_csv_is_one_line(tmp_path, capsys):
    header = (
        "id,model,gpu,tp,weight_dtype,kv_dtype,engine,input_len,output_len,batch_or_concurrency,qps,metric,value,unit"
    )
    path = tmp_path / "points.csv"
    path.write_text(header + "\n" + "x" * 200_000 + ",m,g,1,bf16,auto,vLLM,1,1,1,,m,1,ms\n")
    err = _cli_one_line(["validate", "--points", str(path)], capsys)
    assert "is not a readable CSV" in err


def test_reading_stops_at_the_point_limit_and_says_so():
    # a million rows: parsing stops after the limit (one row past it read to know there are more), in well under a
    # second, instead of parsing every row and refusing afterwards (the time is a benchmark's, not this test's)
    rows = "batch,input_tokens,output_tokens,tpot_ms\n" + "1,100,50,12\n" * 1_000_000
    data = parse_upload("sweep.csv", rows, max_points=2_000)
    assert len(data.points) == 2_000 and "stopped after the first 2,000 points" in data.notes[-1]
    assert len(parse_upload("s.csv", "batch,input_tokens,output_tokens,tpot_ms\n1,1,1,1\n", 2_000).points) == 1


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
