"""A scenario as a URL query string and as a JSON file, both restoring it exactly.

Query parameters are short names of the scenario's fields; a custom model travels as its ModelSpec JSON, the
user's calibration as `cal` = engine~gpu family~the fitted constants as URL-safe base64 of zlib-compressed JSON
(~150 characters). Traffic fields travel only when they differ from TrafficSpec's defaults. Decoding validates
everything and names the offending parameter.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Mapping

from pydantic import ValidationError

from planner.core.errors import InputError, from_validation_error
from planner.core.json_input import load_json
from planner.core.model_spec import ModelSpec
from planner.core.scenario import Calibration, Scenario
from planner.core.specs import Deployment
from planner.core.workload import SLO, TrafficSpec

MAX_SCENARIO_BYTES = 200_000
MAX_CALIBRATION_BYTES = 4_000  # the fitted constants as JSON are ~300 bytes

# query parameter -> Deployment field
_DEPLOYMENT = {
    "gpus": "num_gpus",
    "tp": "tensor_parallel_size",
    "w": "weights",
    "kv": "kv_cache_dtype",
    "util": "gpu_memory_utilization",
    "maxlen": "max_model_len",
    "block": "block_size",
    "seqs": "max_num_seqs",
    "batched": "max_num_batched_tokens",
    "eager": "enforce_eager",
    "pp": "pipeline_parallel_size",
    "dp": "data_parallel_size",
    "ep": "enable_expert_parallel",
    "eps": "ep_size",
    "pfx": "enable_prefix_caching",
    "lpt": "long_prefill_token_threshold",
    "mix": "enable_mixed_chunk",
    "recv": "scheduler_recv_interval",
    "mfs": "mem_fraction_static",
    "bwi": "batch_wait_timeout_iters",
    "bwr": "batch_wait_max_tokens_ratio",
}
_FLOAT_FIELDS = ("gpu_memory_utilization", "batch_wait_max_tokens_ratio", "mem_fraction_static")
_SCENARIO = {
    "context_tokens": "ctx",
    "gpu_memory_gb": "gpu_gb",
    "model_spec": "spec",
    "model": "model",
    "gpu": "gpu",
    "target_rate": "rate",
    "headroom": "headroom",
    "engine": "engine",
    "calibration": "cal",
}
# query parameter -> TrafficSpec field (and its type)
_TRAFFIC = {
    "profile": ("profile", str),
    "in": ("prompt", str),
    "out": ("output", str),
    "arrival": ("arrival", str),
    "cv": ("cv", float),
    "n": ("num_requests", int),
    "seed": ("seed", int),
    "pc": ("prefix_caching", bool),
    "pool": ("prompt_pool", int),
}
# (a trace file path never travels in a link: the upload profile is not shareable)
# query parameter -> SLO field, in seconds
_SLO = {"ttft": "ttft_p95_s", "tpot": "tpot_p95_s", "e2e": "e2e_p99_s"}
_BOOL = {"1": True, "true": True, "0": False, "false": False}


def to_query(s: Scenario) -> dict[str, str]:
    """Every field of the scenario as a string query parameter."""
    q: dict[str, str] = {}
    if s.model_spec is not None:
        q["spec"] = s.model_spec.model_dump_json(exclude_defaults=True)
    else:
        q["model"] = s.model
    q["gpu"] = s.gpu
    if s.gpu_memory_gb is not None:
        q["gpu_gb"] = f"{s.gpu_memory_gb:g}"
    dep = s.deployment.model_dump()
    for param, field in _DEPLOYMENT.items():
        value = dep[field]
        if value is not None:
            q[param] = (
                ("1" if value else "0")
                if isinstance(value, bool)
                else f"{value:g}"
                if isinstance(value, float)
                else str(value)
            )
    if s.context_tokens is not None:
        q["ctx"] = str(s.context_tokens)
    q.update(_workload_query(s))
    if s.calibration is not None:
        q["cal"] = encode_calibration(s.calibration)
    return q


def _text(value) -> str:
    """A value as a query string: booleans 0/1, floats as short as round-trips exactly."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}" if float(f"{value:g}") == value else repr(value)
    return str(value)


def _workload_query(s: Scenario) -> dict[str, str]:
    """The traffic (fields off their defaults), the SLO, the target rate and the headroom."""
    q: dict[str, str] = {}
    default, traffic = TrafficSpec().model_dump(), s.traffic.model_dump()
    for param, (field, _) in _TRAFFIC.items():
        if param == "profile" or traffic[field] != default[field]:
            q[param] = _text(traffic[field])
    for param, field in _SLO.items():
        value = getattr(s.slo, field)
        if value is not None:
            q[param] = _text(float(value))
    q["rate"], q["headroom"] = _text(float(s.target_rate)), _text(float(s.headroom))
    if s.engine != "vllm":
        q["engine"] = s.engine
    return q


def encode_calibration(c: Calibration) -> str:
    """engine~family~base64(zlib(JSON of the profile)): the user's fitted constants in ~150 URL-safe characters."""
    packed = zlib.compress(json.dumps(c.profile, separators=(",", ":")).encode(), 9)
    return f"{c.engine}~{c.gpu_family}~{base64.urlsafe_b64encode(packed).decode().rstrip('=')}"


def decode_calibration(text: str) -> Calibration:
    parts = text.split("~")
    if len(parts) != 3 or not all(parts):
        raise InputError("URL parameter cal", "must be engine~gpu family~constants (as the Share link writes it)")
    try:
        packed = base64.urlsafe_b64decode(parts[2] + "=" * (-len(parts[2]) % 4))
        raw = zlib.decompressobj().decompress(packed, MAX_CALIBRATION_BYTES)  # never inflate more than this
        return Calibration(engine=parts[0], gpu_family=parts[1], profile=load_json(raw, "URL parameter cal"))
    except InputError:
        raise
    except (binascii.Error, zlib.error, ValueError) as err:
        detail = from_validation_error(err).message if isinstance(err, ValidationError) else "cannot be decoded"
        raise InputError("URL parameter cal", f"the fitted constants {detail}") from None


def _number(params: Mapping[str, str], name: str, kind: type):
    raw = params[name]
    try:
        value = float(raw) if kind is float else int(raw)
    except (TypeError, ValueError):
        raise InputError(
            f"URL parameter {name}", f"must be a {'number' if kind is float else 'whole number'}, got {raw!r}"
        ) from None
    return value


def from_query(params: Mapping[str, str]) -> Scenario:
    """A Scenario from query parameters (missing ones take the defaults)."""
    dep: dict = {}
    for param, field in _DEPLOYMENT.items():
        if param not in params:
            continue
        if field in ("weights", "kv_cache_dtype"):
            dep[field] = params[param]
        elif field in ("enforce_eager", "enable_expert_parallel", "enable_prefix_caching", "enable_mixed_chunk"):
            if params[param].lower() not in _BOOL:
                raise InputError(f"URL parameter {param}", "must be 0 or 1")
            dep[field] = _BOOL[params[param].lower()]
        else:
            dep[field] = _number(params, param, float if field in _FLOAT_FIELDS else int)
    try:
        deployment = Deployment(**dep)
    except ValidationError as err:
        e = from_validation_error(err)
        name = next((p for p, f in _DEPLOYMENT.items() if f == e.field), "tp")  # cross-field: tp vs gpus
        raise InputError(f"URL parameter {name}", e.message.removeprefix("Value error, ")) from None
    fields: dict = {"deployment": deployment}
    if "spec" in params:
        fields["model_spec"] = _spec(params["spec"], "URL parameter spec")
    if "model" in params:
        fields["model"] = params["model"]
    if "gpu" in params:
        fields["gpu"] = params["gpu"]
    if "gpu_gb" in params:
        fields["gpu_memory_gb"] = _number(params, "gpu_gb", float)
    if "ctx" in params:
        fields["context_tokens"] = _number(params, "ctx", int)
    fields.update(_workload_fields(params))
    if "ctx" in params and "profile" not in params and fields["context_tokens"] >= 2:  # a link from before the workload
        fields["traffic"] = TrafficSpec(profile="custom", **_old_link_lengths(fields["context_tokens"]))
    if "cal" in params:
        fields["calibration"] = decode_calibration(params["cal"])
    try:
        return Scenario(**fields)
    except ValidationError as err:
        e = from_validation_error(err)
        name = _SCENARIO.get(e.field.split(".")[0], e.field)
        raise InputError(f"URL parameter {name}", e.message.removeprefix("Value error, ")) from None


def _old_link_lengths(context_tokens: int) -> dict[str, str]:
    """Tokens per request as a custom workload: the primer's 300-token answer, at most half the context."""
    output = max(1, min(300, context_tokens // 2))
    return {"prompt": f"fixed:{context_tokens - output}", "output": f"fixed:{output}"}


def _workload_fields(params: Mapping[str, str]) -> dict:
    """traffic, slo, target_rate, headroom and engine from their query parameters (absent ones keep defaults)."""
    traffic: dict = {}
    for param, (field, kind) in _TRAFFIC.items():
        if param not in params:
            continue
        if kind is bool:
            if params[param].lower() not in _BOOL:
                raise InputError(f"URL parameter {param}", "must be 0 or 1")
            traffic[field] = _BOOL[params[param].lower()]
        else:
            traffic[field] = params[param] if kind is str else _number(params, param, kind)
    slo = {field: _number(params, param, float) for param, field in _SLO.items() if param in params}
    fields: dict = {}
    for name, model, values, names in (
        ("traffic", TrafficSpec, traffic, {f: p for p, (f, _) in _TRAFFIC.items()}),
        ("slo", SLO, slo, {f: p for p, f in _SLO.items()}),
    ):
        try:
            fields[name] = model(**values)
        except ValidationError as err:
            e = from_validation_error(err)
            param = names.get(e.field, "profile" if name == "traffic" else "ttft")
            raise InputError(f"URL parameter {param}", e.message.removeprefix("Value error, ")) from None
    for param, field in (("rate", "target_rate"), ("headroom", "headroom")):
        if param in params:
            fields[field] = _number(params, param, float)
    if "engine" in params:
        fields["engine"] = params["engine"]
    return fields


def _spec(text: str, where: str) -> ModelSpec:
    try:
        return ModelSpec.model_validate_json(text)
    except ValidationError as err:
        raise from_validation_error(err, prefix=f"{where}: ") from None


def to_json(s: Scenario) -> str:
    """The scenario as a JSON document (what "Save scenario" downloads)."""
    return json.dumps({"servingplan_scenario": 1, **s.model_dump(mode="json")}, indent=2)


def from_json(text: str | bytes, source: str = "scenario.json") -> Scenario:
    """A Scenario from a saved JSON document, every field validated."""
    if len(text) > MAX_SCENARIO_BYTES:
        raise InputError(source, f"file is {len(text):,} bytes; a saved scenario is at most {MAX_SCENARIO_BYTES:,}")
    data = load_json(text, source)  # bad JSON, bad UTF-8, 10^400, a 5,000-digit number, deep nesting
    if not isinstance(data, dict) or data.pop("servingplan_scenario", None) != 1:
        raise InputError(source, 'is not a servingplan scenario (missing "servingplan_scenario": 1)')
    ctx = data.get("context_tokens")
    if "traffic" not in data and isinstance(ctx, int) and not isinstance(ctx, bool) and ctx >= 2:
        data["traffic"] = {"profile": "custom", **_old_link_lengths(ctx)}  # saved before the workload existed
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise from_validation_error(err, prefix=f"{source}: ") from None
