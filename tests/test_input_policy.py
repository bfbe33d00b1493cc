"""One input policy at the edges: numbers beyond float range, non-finite or subnormal stop where they
enter (CLI flags, config.json, model spec, share link, saved scenario, JSON uploads, trace lines) with one line
naming the field; `--json` never prints Infinity or NaN."""

from __future__ import annotations

import json

import pytest

from planner.cli import emit, main
from planner.core.catalog import model_presets
from planner.core.errors import InputError
from planner.core.hf_config import parse_config_text
from planner.core.json_input import load_json
from planner.core.scenario import Scenario
from planner.core.scenario_codec import decode_calibration, from_json, from_query
from planner.core.specs import Deployment

HUGE_INT = str(10**400)  # 401 digits: overflows the first float() it meets
HOSTILE_NUMBERS = [HUGE_INT, "1e400", "1e309", "5e-324", "inf", "-inf", "nan", "9" * 5000]
REAL = json.loads(model_presets()["meta-llama/Llama-3.1-8B"].read_text())


def _one_line_exit_2(argv, capsys) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and len(err) < 300, err
    return err


@pytest.mark.parametrize("value", HOSTILE_NUMBERS)
@pytest.mark.parametrize(
    "argv, flag",
    [
        (["memory", "--max-num-seqs"], "--max-num-seqs"),
        (["memory", "--gpu-memory-gb"], "--gpu-memory-gb"),
        (["capacity", "--target-rate"], "--target-rate"),
        (["simulate", "--rate"], "--rate"),
        (["prefix-cache", "--queue-wait-ms"], "--queue-wait-ms"),
    ],
)
def test_cli_flags_refuse_numbers_beyond_range(argv, flag, value, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*argv, value])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and flag in err and len(err) < 300, err


def test_cli_bounds_that_are_not_float_range(capsys):
    assert "--headroom" in _one_line_exit_2(["capacity", "--target-rate", "5", "--headroom", "1e14"], capsys)
    assert "--target-rate" in _one_line_exit_2(["capacity", "--target-rate", "1e-9"], capsys)


def test_json_output_is_strict_json(capsys):
    emit({"rate": float("inf"), "rows": [{"x": float("nan")}, 1.5]}, True, "")
    out = capsys.readouterr().out
    assert "Infinity" not in out and "NaN" not in out
    assert json.loads(out) == {"rate": None, "rows": [{"x": None}, 1.5]}


@pytest.mark.parametrize("value", [10**400, 1e300, -(10**30), 2**60])
@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "vocab_size", "max_position_embeddings"])
def test_config_json_numbers_beyond_range_name_the_key(key, value):
    with pytest.raises(InputError) as err:
        parse_config_text(json.dumps({**REAL, key: value}), name="x")
    assert key in err.value.field and len(str(err.value)) < 300


@pytest.mark.parametrize("text", ['{"a": 1e400}', '{"a": NaN}', '{"a": -Infinity}', "[" + "9" * 5000 + "]"])
def test_json_reader_refuses_non_finite_and_huge_numbers(text):
    with pytest.raises(InputError) as err:
        load_json(text, "upload.json")
    assert err.value.field == "upload.json" and len(err.value.message) < 120


def test_json_reader_refuses_deep_nesting():
    with pytest.raises(InputError, match="nested too deeply"):
        load_json("[" * 100_000 + "]" * 100_000, "upload.json")


@pytest.mark.parametrize(
    "query, field",
    [
        ({"rate": "1e400"}, "rate"),
        ({"rate": "5e-324"}, "rate"),
        ({"ctx": HUGE_INT}, "ctx"),
        ({"maxlen": HUGE_INT}, "maxlen"),
        ({"n": HUGE_INT}, "n"),
        ({"cv": "nan"}, "cv"),
        ({"ttft": "inf"}, "ttft"),
        ({"gpu_gb": "1e309"}, "gpu_gb"),
        ({"spec": '{"name":"x","hidden_size":' + HUGE_INT + "}"}, "spec"),
    ],
)
def test_share_link_numbers_beyond_range_name_the_parameter(query, field):
    with pytest.raises(InputError) as err:
        from_query(query)
    assert err.value.field.startswith(f"URL parameter {field}") and len(str(err.value)) < 300


def test_share_link_calibration_nested_deep_is_one_error():
    import base64
    import zlib

    packed = base64.urlsafe_b64encode(zlib.compress(b"[" * 3000 + b"]" * 3000)).decode().rstrip("=")
    with pytest.raises(InputError) as err:
        decode_calibration(f"vllm~hopper~{packed}")
    assert err.value.field == "URL parameter cal"


@pytest.mark.parametrize("value", [10**400, float("inf"), 5e-324])
def test_pydantic_specs_refuse_out_of_range_numbers(value):
    with pytest.raises(ValueError) as err:  # pydantic's ValidationError is a ValueError
        Deployment(max_model_len=value) if isinstance(value, int) else Scenario(target_rate=value)
    assert "max_model_len" in str(err.value) or "target_rate" in str(err.value)


def test_saved_scenario_with_10_to_400_names_the_field():
    doc = {"servingplan_scenario": 1, **json.loads(Scenario().model_dump_json())}
    doc["deployment"]["max_model_len"] = 10**400
    with pytest.raises(InputError) as err:
        from_json(json.dumps(doc))
    assert len(str(err.value)) < 300 and "scenario.json" in err.value.field


def test_real_inputs_still_pass():
    assert parse_config_text(json.dumps(REAL), name="llama").hidden_size == 4096
    assert from_query({"rate": "2.5", "n": "2000"}).target_rate == 2.5
    assert load_json('{"a": [1, 2.5e-6, 9007199254740993]}', "x") == {"a": [1, 2.5e-6, 9007199254740993]}


def test_published_configs_may_say_infinity_where_the_planner_reads_no_number():
    # Nemotron-3-Super's config.json carries "time_step_limit": [0.0, Infinity] (Python's json.dumps); the planner
    # reads no such field, so the config loads; a field it does read names itself
    base = {"num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 10, "vocab_size": 100}
    text = json.dumps({**base, "hidden_size": 64, "time_step_limit": [0.0, float("inf")]})
    assert "Infinity" in text
    assert parse_config_text(text).hidden_size == 64
    with pytest.raises(InputError, match="hidden_size: must be a whole number.*'Infinity'"):
        parse_config_text(json.dumps({**base, "hidden_size": float("inf")}))
