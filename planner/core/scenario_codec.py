"""A scenario as a URL query string and as a JSON file, both restoring it exactly.

Query parameters are short names of the scenario's fields; a custom model travels as its ModelSpec JSON.
Decoding validates everything and names the offending parameter.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from pydantic import ValidationError

from planner.core.errors import InputError, from_validation_error
from planner.core.scenario import Scenario
from planner.core.specs import Deployment, ModelSpec

MAX_SCENARIO_BYTES = 200_000

# query parameter -> Deployment field
_DEPLOYMENT = {"gpus": "num_gpus", "tp": "tensor_parallel_size", "w": "weights", "kv": "kv_cache_dtype",
               "util": "gpu_memory_utilization", "maxlen": "max_model_len", "block": "block_size",
               "seqs": "max_num_seqs", "batched": "max_num_batched_tokens", "eager": "enforce_eager",
               "pp": "pipeline_parallel_size", "dp": "data_parallel_size", "ep": "enable_expert_parallel"}
_SCENARIO = {"context_tokens": "ctx", "gpu_memory_gb": "gpu_gb", "model_spec": "spec", "model": "model", "gpu": "gpu"}
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
            q[param] = ("1" if value else "0") if isinstance(value, bool) else f"{value:g}" if isinstance(value, float) else str(value)
    if s.context_tokens is not None:
        q["ctx"] = str(s.context_tokens)
    return q


def _number(params: Mapping[str, str], name: str, kind: type):
    raw = params[name]
    try:
        value = float(raw) if kind is float else int(raw)
    except (TypeError, ValueError):
        raise InputError(f"URL parameter {name}", f"must be a {'number' if kind is float else 'whole number'}, got {raw!r}") from None
    return value


def from_query(params: Mapping[str, str]) -> Scenario:
    """A Scenario from query parameters (missing ones take the defaults)."""
    dep: dict = {}
    for param, field in _DEPLOYMENT.items():
        if param not in params:
            continue
        if field in ("weights", "kv_cache_dtype"):
            dep[field] = params[param]
        elif field in ("enforce_eager", "enable_expert_parallel"):
            if params[param].lower() not in _BOOL:
                raise InputError(f"URL parameter {param}", "must be 0 or 1")
            dep[field] = _BOOL[params[param].lower()]
        else:
            dep[field] = _number(params, param, float if field == "gpu_memory_utilization" else int)
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
    try:
        return Scenario(**fields)
    except ValidationError as err:
        e = from_validation_error(err)
        name = _SCENARIO.get(e.field.split(".")[0], e.field)
        raise InputError(f"URL parameter {name}", e.message.removeprefix("Value error, ")) from None


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
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:  # bad JSON, bad UTF-8, a 5,000-digit number, deep nesting
        raise InputError(source, f"is not valid JSON ({type(err).__name__}: {str(err)[:200]})") from None
    if not isinstance(data, dict) or data.pop("servingplan_scenario", None) != 1:
        raise InputError(source, "is not a servingplan scenario (missing \"servingplan_scenario\": 1)")
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise from_validation_error(err, prefix=f"{source}: ") from None
