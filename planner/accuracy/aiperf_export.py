"""AIPerf's summary export (`profile_export_aiperf.json`, ai-dynamo/aiperf) as the user's points: one run, one point.

The export holds one object per metric at the top level, each its statistics with a unit: {"time_to_first_token":
{"avg", "p50", "p99", ..., "unit": "ms"}, "inter_token_latency": {...}, "input_sequence_length": {"avg", ...,
"unit": "tokens"}, "output_sequence_length", "request_throughput" ("requests/sec"), "output_token_throughput",
"request_count", ...}, and the run's settings under "input_config" ("loadgen": {"concurrency": N} or
{"request_rate": R}, "models": {"items": [{"name"}]}). Field names as aiperf writes them (ai-dynamo/aiperf
docs/media/results/ml-lab/ghost-run/profile_export_aiperf.json at 880522f7, and the loadgen / sequence-length keys
of its exports as other projects' tests read them). The mean ("avg") is read, in the unit the file states; AIPerf's
inter-token latency excludes the first token, as vLLM's TPOT does.

A run at --concurrency N is N closed-loop users; one at --request-rate R is arrivals at R per second.
"""

from __future__ import annotations

from planner.accuracy.user_values import MAX_MODEL_ID_CHARS, UserData, UserPoint, check_number
from planner.core.errors import InputError

TIME_UNITS_MS = {"ms": 1.0, "s": 1e3, "sec": 1e3, "us": 1e-3, "ns": 1e-6}


def is_aiperf(doc) -> bool:
    """An AIPerf summary: its version, its input_config, or a time_to_first_token with AIPerf's "avg"."""
    if not isinstance(doc, dict):
        return False
    ttft = doc.get("time_to_first_token")
    return "aiperf_version" in doc or "input_config" in doc or (isinstance(ttft, dict) and "avg" in ttft)


def parse_aiperf(doc: dict) -> UserData:
    """The run's one point; InputError names the missing or bad field."""
    loadgen = _section(doc, ("input_config", "loadgen"))
    users = _optional(loadgen, "concurrency", "input_config.loadgen")
    rate = _optional(loadgen, "request_rate", "input_config.loadgen")
    isl, osl = _mean(doc, "input_sequence_length"), _mean(doc, "output_sequence_length")
    ttft, itl = _ms(doc, "time_to_first_token"), _ms(doc, "inter_token_latency", required=False)
    if users is None and rate is None:  # neither recorded: the mean in flight by Little's law
        lam, e2e_ms = _mean(doc, "request_throughput"), _ms(doc, "request_latency")
        batch, how = lam * e2e_ms / 1e3, f"Little's law {lam:.3g} req/s × {e2e_ms / 1e3:.3g} s"
    else:
        batch, how = (users, "AIPerf --concurrency") if users is not None else (1.0, "AIPerf --request-rate")
    label = f"concurrency {users:g}" if users is not None else (f"rate {rate:g}/s" if rate else "run")
    point = UserPoint.serving_run(
        label,
        batch,
        how,
        (isl, osl),
        tpot_ms=itl,
        ttft_ms=ttft,
        request_rate=rate if users is None else None,
        users=max(1, round(users)) if users is not None else None,
    )
    notes = ("TTFT and inter-token latency: AIPerf's means (avg) over the profiled requests",)
    return UserData("aiperf", (point,), _model(doc), notes)


def _section(doc: dict, path: tuple[str, ...]) -> dict:
    node, where = doc, ""
    for key in path:
        where = f"{where}.{key}" if where else key
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return {}
        if not isinstance(node, dict):
            raise InputError(where, f"must be an object, got {type(node).__name__}")
    return node


def _optional(d: dict, key: str, where: str) -> float | None:
    return None if d.get(key) is None else check_number(d[key], f"{where}.{key}")


def _mean(doc: dict, name: str, required: bool = True) -> float | None:
    stats = doc.get(name)
    if stats is None or (isinstance(stats, dict) and stats.get("avg") is None):
        if required:
            raise InputError(f"{name}.avg", "missing (is this AIPerf's profile_export_aiperf.json?)")
        return None
    if not isinstance(stats, dict):
        raise InputError(name, f"must be an object of statistics, got {type(stats).__name__}")
    return check_number(stats["avg"], f"{name}.avg")


def _ms(doc: dict, name: str, required: bool = True) -> float | None:
    value = _mean(doc, name, required)
    if value is None:
        return None
    unit = doc[name].get("unit", "ms")
    if unit not in TIME_UNITS_MS:
        raise InputError(f"{name}.unit", f"must be one of {', '.join(TIME_UNITS_MS)}, got {str(unit)[:20]!r}")
    return value * TIME_UNITS_MS[unit]


def _model(doc: dict) -> str:
    items = _section(doc, ("input_config", "models")).get("items")
    first = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}
    name = first.get("name")
    return name[:MAX_MODEL_ID_CHARS] if isinstance(name, str) else ""
